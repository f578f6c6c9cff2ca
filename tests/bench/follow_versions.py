"""What following a growing memories table costs the serving index's LanceDB connection (issue 19: the
gateway's memory per memory): a script, not a pytest test.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/bench/follow_versions.py --data-dir DIR/data \\
        [--versions 400] [--rows 500] [--unbounded]

DIR/data is a zhiyi data dir whose memories projection holds a table (e.g. `tests/bench/million.py
--data-dir DIR`'s). Its memories directory is copied to a scratch dir; then, --versions times, --rows of
its rows are appended again under new ids and later positions (one table version each, as a projector's
batch makes), and `TableAt.changed` reads the rows changed since the previous version, as the gateway's
serving index does at every refresh. Every 50 versions it prints the connection's LanceDB session size
(its index and metadata caches) and this process's RSS growth since the first version. The writer has
a small bounded session of its own, so the growth shown is the follower's. --unbounded: the follower's
connection gets LanceDB's default session (what the gateway had before the bound).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import lancedb  # noqa: E402
import pyarrow as pa  # noqa: E402

from events import positions  # noqa: E402
from projections.core.checkpoint import Checkpoint  # noqa: E402
from projections.core.lance_session import DELTA_READS, CacheBounds  # noqa: E402
from projections.core.registry import projection_dir  # noqa: E402
from projections.memories.schema import TABLE  # noqa: E402
from projections.serving.table_at import TableAt  # noqa: E402

WRITER = CacheBounds(index_bytes=8 << 20, metadata_bytes=8 << 20)
UNBOUNDED = CacheBounds(index_bytes=1 << 40, metadata_bytes=1 << 40)


def rss() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


async def main(args) -> None:
    source = projection_dir(Path(args.data_dir), "memories")
    with tempfile.TemporaryDirectory(prefix="zhiyi-follow-") as scratch:
        memories = Path(scratch) / "memories"
        shutil.copytree(source, memories)
        table = lancedb.connect(str(memories), session=WRITER.session()).open_table(TABLE)
        rows = table.to_arrow()
        ms = max((positions.key(p) for p in rows.column("position").to_pylist()))[0]
        follower = TableAt(memories, UNBOUNDED if args.unbounded else DELTA_READS)
        print(f"{rows.num_rows:,} rows; {args.versions} versions of {args.rows} rows; follower's session "
              f"{'LanceDB default (unbounded)' if args.unbounded else DELTA_READS}", flush=True)
        start = None
        for v in range(args.versions):
            lo = (v * args.rows) % max(rows.num_rows - args.rows, 1)
            batch = rows.slice(lo, args.rows)
            batch = batch.set_column(batch.schema.get_field_index("id"), "id",
                                     pa.array([f"follow-{v}-{i}" for i in range(batch.num_rows)]))
            batch = batch.set_column(batch.schema.get_field_index("position"), "position",
                                     pa.array([f"{ms + 1000 * (v + 1)}-{i}" for i in range(batch.num_rows)]))
            table.add(batch)
            ck = Checkpoint(projector="memories", position=f"{ms + 1000 * (v + 1)}-{batch.num_rows - 1}",
                            table_version=table.version)
            got = await follower.changed(ck, f"{ms + 1000 * v}-{args.rows}", 50_000)
            assert got is not None and got.num_rows == batch.num_rows, "the follower missed a delta"
            if start is None:
                start = rss()
            if (v + 1) % 50 == 0:
                print(f"  {v + 1:4d} versions: session {follower.session.size_bytes / 2 ** 20:6.1f} MB, "
                      f"RSS +{(rss() - start) / 2 ** 20:,.0f} MB", flush=True)
        follower.close()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--data-dir", required=True, help="a zhiyi data dir (e.g. million.py's DIR/data)")
    p.add_argument("--versions", type=int, default=400)
    p.add_argument("--rows", type=int, default=500)
    p.add_argument("--unbounded", action="store_true")
    asyncio.run(main(p.parse_args()))
