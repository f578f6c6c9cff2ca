"""Test-only loader of the committed fixture event log (tests/fixtures/event_log.jsonl).

The fixture is a log recorded once from the real app (tests/fixtures/make_event_log.py); it pins
what today's folds make of it (tests/fixtures/event_log.digests.json), so that a re-layout of the
packages can prove it changed no fold. Loading never goes through the public API: each entry is
XADDed with its original stream id and its raw fields, in their stored order; then the log's epoch
key is set and the write-side indexes (agents' key hashes, memories' versions, namespace owners)
are rebuilt from the log, as `zhiyi replay --in-place` would.

The Redis key names are written out here on purpose (not imported): they are stored data, and a
re-layout must not change them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import orjson

FIXTURES = Path(__file__).parent / "fixtures"
LOG_PATH = FIXTURES / "event_log.jsonl"
DIGESTS_PATH = FIXTURES / "event_log.digests.json"
STREAM = "zhiyi:events"
EPOCH_KEY = "zhiyi:epoch"
FIXTURE_EPOCH = "fixture-event-log"
REGENERATE = (".venv/bin/python tests/fixtures/make_event_log.py && "
              ".venv/bin/python tests/fixtures/make_event_log.py --digests")


class FixtureEmbedder:
    """A deterministic embedder for folding the fixture (sha256-seeded unit vectors, a fixed model id).

    Digests stand vectors for (model, sha256(content)), so only `model_id` reaches them; kept here
    (not imported from the package) so that the fixture's digests do not depend on where a
    production or test embedder lives.
    """

    dim = 16
    model_id = "fixture-sha256-16"

    def vector(self, text: str) -> np.ndarray:
        import hashlib

        seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
        v = np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)
        return v / np.linalg.norm(v)

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self.vector(t) for t in texts]).astype(np.float32)

    def close(self) -> None:
        pass


def read_entries(path: Path = LOG_PATH) -> list[tuple[str, list[tuple[str, str]]]]:
    """The fixture's entries: (stream id, [(field, value), ...]) in log order."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row: dict[str, Any] = orjson.loads(line)
            out.append((row["id"], [(k, v) for k, v in row["fields"]]))
    return out


def entry_types(entries: list[tuple[str, list[tuple[str, str]]]]) -> set[str]:
    return {dict(fields)["t"] for _, fields in entries}


async def load_fixture_log(redis, path: Path = LOG_PATH) -> str:
    """XADD every entry of the fixture with its original id into an empty log; set the epoch;
    rebuild the write-side indexes. Returns the last position."""
    from events.redis.store import EventStore

    if await redis.exists(STREAM):
        raise RuntimeError(f"{STREAM} is not empty: the fixture loads into an empty Redis only")
    entries = read_entries(path)
    pipe = redis.pipeline(transaction=False)
    for position, fields in entries:
        pipe.xadd(STREAM, dict(fields), id=position)
    await pipe.execute()
    await redis.set(EPOCH_KEY, FIXTURE_EPOCH)
    await EventStore(redis, origin="fixture-loader").rebuild_indexes()
    return entries[-1][0]


def _rows(digests: dict) -> dict[str, dict[str, Any]]:
    return {name: {"position": d.position, "digest": d.digest} for name, d in sorted(digests.items())}


async def fold_digests(redis, workdir: Path, *, live_batch_size: int = 7) -> dict[str, Any]:
    """What the fixture's log folds to, three ways, over a loaded log:

    - `rebuild`: projections.core.replay.rebuild into a fresh root (what `zhiyi replay --into` prints);
    - `live`: the projection runners folding it in small batches (`live_batch_size`, so batches
      split the log unlike a rebuild's), then projections.core.replay.live_digests (what `zhiyi digest`
      prints);
    - `verify_ok`: projections.core.replay.verify of that live root (`zhiyi replay --verify`).
    """
    from events.redis.store import EventStore
    from projections.core.registry import make_projectors
    from projections.core.replay import live_digests, rebuild, verify
    from projections.core.runner import ProjectionRunner

    store = EventStore(redis, origin="fixture-digests")
    embedder = FixtureEmbedder()
    epoch = await store.log_epoch()
    rebuilt = await rebuild(store, workdir / "rebuilt", embedder)
    for p in make_projectors(workdir / "live", embedder):
        try:
            await ProjectionRunner(store, p, publish=True, batch_size=live_batch_size, epoch=epoch).catch_up()
        finally:
            await p.close()
    live = await live_digests(workdir / "live", embedder)
    report = await verify(store, workdir / "live", workdir / "scratch", embedder)
    return {"rebuild": _rows(rebuilt), "live": _rows(live), "verify_ok": report.ok,
            "verify_mismatches": report.mismatches}
