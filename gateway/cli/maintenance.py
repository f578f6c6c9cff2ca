"""`zhiyi digest` and `zhiyi replay`: thin CLI glue over projections.core.replay."""

from __future__ import annotations

import os
import sys
from functools import partial
from pathlib import Path

import orjson

from events.redis.store import EventStore
from gateway.process.logging_setup import configure_from_environment
from gateway.process.settings import Settings
from gateway.process.model_services import make_embedding_model
from gateway.process.log_reader import log_reader
from gateway.process.wiring import open_services
from projections.core import replay as rebuilds
from projections.core.rebuild_process import MIN_EVENTS, SecondProcess
from projections.core.registry import projections_root
from projections.core.replay import ProjectionDigest
from projections.core.replay_in_place import outdated, rebuild_in_place


def _rows(digests: dict[str, ProjectionDigest]) -> list[dict]:
    return [{"projection": d.name, "position": d.position, "digest": d.digest,
             **({"events": d.events} if d.events is not None else {})} for d in digests.values()]


def _print(digests: dict[str, ProjectionDigest], title: str, as_json: bool) -> None:
    if as_json:
        return
    print(title)
    for row in _rows(digests):
        extra = f"  events={row['events']}" if "events" in row else ""
        print(f"  {row['projection']:<12} position={row['position'] or '-':<22} digest={row['digest']}{extra}")


def second_process(settings: Settings, processes: int | None) -> SecondProcess | None:
    """Whether a rebuild folds the graph in a second process (`--processes`:
    1 never, 2 always, None when the log is long enough and a second core is there)."""
    if processes == 1 or (processes is None and (os.cpu_count() or 1) < 2):
        return None
    return SecondProcess(partial(log_reader, settings.redis_url), configure_from_environment,
                         min_events=0 if processes == 2 else MIN_EVENTS)


def outdated_projections(settings: Settings) -> list[str]:
    """What stops this build from folding on the data dir's projections (see replay_in_place.outdated)."""
    embedder = make_embedding_model(settings)  # no loop yet (`zhiyi up` checks before it starts)
    try:
        return outdated(settings.data_dir, embedder)
    finally:
        embedder.close()


def refuse_outdated(settings: Settings) -> bool:
    """Print why and how to rebuild when the projections were built by an older build; True if so."""
    problems = outdated_projections(settings)
    for problem in problems:
        print(f"zhiyi: {problem}", file=sys.stderr)
    if problems:
        print("zhiyi: run `zhiyi replay --in-place --data-dir DIR` once (the old projections are kept beside "
              "the rebuilt ones), then start again", file=sys.stderr)
    return bool(problems)


async def print_digests(settings: Settings, *, as_json: bool = False) -> int:
    async with open_services(settings) as services:
        digests = await rebuilds.live_digests(settings.data_dir, services.embedder)
    if as_json:
        print(orjson.dumps({"projections": _rows(digests)}).decode())
    else:
        _print(digests, f"live projections in {settings.data_dir.resolve()}:", False)
    return 0


async def replay(settings: Settings, into: Path, *, until: str | None, verify: bool, as_json: bool,
                 processes: int | None = None) -> int:
    async with open_services(settings, origin="replay") as services:
        store, embedder = services.store, services.embedder
        if verify:
            return await _verify(store, settings, into, embedder, as_json, processes)
        digests = await rebuilds.rebuild(store, into, embedder, until, second=second_process(settings, processes))
    if as_json:
        print(orjson.dumps({"into": str(into), "projections": _rows(digests)}).decode())
    else:
        _print(digests, f"rebuilt into {into.resolve()}" + (f" until {until}" if until else "") + ":", False)
    return 0


async def replay_in_place(settings: Settings, *, as_json: bool, processes: int | None = None) -> int:
    """`zhiyi replay --in-place`: see projections.core.replay_in_place."""
    async with open_services(settings, origin="replay") as services:
        done = await rebuild_in_place(services.store, settings.data_dir, services.embedder,
                                      second=second_process(settings, processes))
    kept = str(done.kept.resolve()) if done.kept else None
    if as_json:
        print(orjson.dumps({"epoch": done.epoch, "previous_epoch": done.previous_epoch, "kept": kept,
                            "projections": _rows(done.digests)}).decode())
        return 0
    _print(done.digests, f"rebuilt {projections_root(settings.data_dir).resolve()} from the log (epoch {done.epoch}):",
           False)
    print(f"the previous projections (epoch {done.previous_epoch or 'none recorded'}) are kept in {kept}"
          if kept else "there were no previous projections")
    if done.previous_epoch != done.epoch:
        print("a running zhiyi serves again from the rebuilt projections; agents registered only in a lost log "
              "must register again")
    else:
        print("the projections are now this build's: start zhiyi again")
    return 0


async def _verify(store: EventStore, settings: Settings, into: Path, embedder, as_json: bool,
                  processes: int | None) -> int:
    report = await rebuilds.verify(store, settings.data_dir, into, embedder, second=second_process(settings, processes))
    if as_json:
        print(orjson.dumps({"ok": report.ok, "live": _rows(report.live),
                            "rebuilds": [_rows(r) for r in report.rebuilds],
                            "mismatches": report.mismatches}).decode())
    else:
        _print(report.live, "live:", False)
        for i, run in enumerate(report.rebuilds, 1):
            _print(run, f"rebuild {i}:", False)
        print("verify: OK — both rebuilds match the live projections" if report.ok
              else "verify: FAILED\n  " + "\n  ".join(report.mismatches))
    if not report.ok:
        print("zhiyi replay --verify: digests differ", file=sys.stderr)
    return 0 if report.ok else 1
