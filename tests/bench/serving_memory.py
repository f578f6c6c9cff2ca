"""What the serving index costs in memory per memory, and what its dense search gives up for it
(issue 19, part 1): a script, not a pytest test.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/bench/serving_memory.py [--n 20000,100000] [--dim 512]

For each N it writes a memories table of N rows straight into LanceDB (the projection's schema and
a checkpoint naming its version; no Redis, no projector): English and Chinese texts of 40-300
characters, 30% in `shared` and the rest over 20 agent namespaces, vectors of realistic structure
(topics of ~40 memories each in a 96-dimensional latent space, mixed into `dim` dimensions plus
noise, unit length: like sentence embeddings, clustered, a few principal axes holding most of the
variance); a query is a stored vector plus noise (a paraphrase). A fresh child process then loads the
index (`ServingIndex.wait_ready`, IVF trained where a namespace is big enough) and reports its RSS
growth over N, beside the bytes of the texts and of float32 vectors (the reference: a float32
copy alone costs 4 x dim bytes a memory). It also reports recall@10 of the index's dense search
against an exact float32 scan of the same vectors (numpy, in the child) for 200 queries in the
biggest namespace, the load time, and the bytes each part of the index holds (`breakdown`: B a
memory, the impact cache empty since no BM25 query ran).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402

EN = ["the staging database", "nginx", "runs on", "port 8080", "prefers", "short answers", "the backup job",
      "every night", "was moved to", "the GPU server", "after the outage", "the payments team", "depends on",
      "PostgreSQL 15", "according to the runbook", "the user", "likes", "green tea", "in the morning"]
ZH = ["部署脚本", "运行在", "主力机", "用户", "偏好", "结论先行", "知识图谱", "依赖", "向量索引", "每周五下午",
      "迁移到", "测试环境", "磁盘写满", "故障之后", "财务系统", "喜欢", "绿茶"]


def _rss() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS"):
                return int(line.split()[1]) * 1024
    return 0


def _text(rng: random.Random, i: int) -> str:
    target = rng.randint(40, 300)
    words = ZH if i % 3 == 0 else EN
    sep = "" if words is ZH else " "
    out = ""
    while len(out) < target:
        out += sep + rng.choice(words)
    return f"{out.strip()} #{i}"


def write_table(directory: Path, n: int, dim: int) -> int:
    import lancedb

    from projections.core import checkpoint as checkpoint_file
    from projections.core.checkpoint import Checkpoint
    from projections.memories.schema import SEARCH_TEXT, TABLE, memories_schema
    from projections.text.lexical import index_text

    rng = random.Random(19)
    gen = np.random.default_rng(19)
    mix = gen.standard_normal((96, dim)).astype(np.float32)
    topics = gen.standard_normal((max(n // 40, 1), 96))   # what memories are about: ~40 a topic
    schema = memories_schema(dim)
    db = lancedb.connect(str(directory))
    table = None
    text_bytes = 0
    for lo in range(0, n, 20_000):
        hi = min(lo + 20_000, n)
        texts = [_text(rng, i) for i in range(lo, hi)]
        text_bytes += sum(len(t.encode()) for t in texts)
        latent = topics[gen.integers(len(topics), size=hi - lo)] + 0.6 * gen.standard_normal((hi - lo, 96))
        v = latent.astype(np.float32) @ mix
        v += 0.3 * gen.standard_normal(v.shape).astype(np.float32) * np.abs(v).mean()
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        rows = {c: [] for c in schema.names}
        for k, i in enumerate(range(lo, hi)):
            ns = "shared" if i % 10 < 3 else f"agent{i % 20:02d}-main"
            values = {"id": f"mem-{i:09d}", "content": texts[k], SEARCH_TEXT: index_text(texts[k]),
                      "vector": v[k], "model": "bench", "category": "fact", "decay_class": "system_fact",
                      "kind": "L1", "namespace": ns, "agent_id": ns.split("-")[0], "tier": "episodic",
                      "importance": 0.5, "quality_score": 0.5, "freshness": "fresh", "recall_count": 0,
                      "useful_count": 0, "not_useful_count": 0, "version": 1, "version_history": "[]",
                      "source": "agent_inference", "tags": ["ops"] if i % 4 == 0 else [], "volatile_flag": False,
                      "timestamp": "2026-12-05T06:00:00.000000Z", "last_recalled_at": "", "is_deleted": False,
                      "depends_on": "", "derived_from": f"episode-{i // 50}" if i % 7 == 0 else "",
                      "extractor": "", "position": f"{1_765_000_000_000 + i}-0", "status": "active",
                      "merged_into": "", "conflicts": [], "confidence": 0.5,
                      "updated_at": "2026-12-05T06:00:00.000000Z", "quality_notice_at": "", "crdt": "{}"}
            for c in schema.names:
                rows[c].append(values[c])
        batch = pa.table({c: rows[c] if c != "vector" else pa.FixedSizeListArray.from_arrays(
            pa.array(v.reshape(-1)), dim) for c in schema.names}, schema=schema)
        table = db.create_table(TABLE, batch) if table is None else table
        if lo:
            table.add(batch)
    assert table is not None
    checkpoint_file.save(directory, Checkpoint("memories", f"{1_765_000_000_000 + n - 1}-0", table.version))
    return text_bytes


def _strings(values) -> int:
    return sum(sys.getsizeof(v) for v in values)


def breakdown(state) -> dict[str, int]:
    """Bytes held by each part of a loaded index (arrays at their allocated capacity; Python objects by
    sys.getsizeof, a string counted once where it is shared): what the RSS growth is made of, the rest
    being allocator overhead. Reads the parts' private fields: a bench, not an API."""
    out = dict.fromkeys(["int8 vectors", "row records (texts)", "BM25 postings", "BM25 term dictionary",
                         "BM25 impact cache", "IVF reduced rows", "IVF lists", "ids", "locations",
                         "live/neighbour arrays", "per-slot BM25 arrays"], 0)
    for part in state.parts.values():
        out["int8 vectors"] += part.vectors.codes.nbytes + part.vectors.scales.nbytes
        rows = part.rows
        out["row records (texts)"] += (len(rows._data) + rows._start.itemsize * len(rows._start)
                                       + rows._end.itemsize * len(rows._end))
        lex = part.lexical
        out["BM25 postings"] += lex._main.nbytes + sum(a.itemsize * len(a) + b.itemsize * len(b)
                                                       for a, b in lex._new.values())
        out["BM25 term dictionary"] += sys.getsizeof(lex._tid) + _strings(lex._tid) + lex._df.nbytes
        out["BM25 impact cache"] += sum(v[1].nbytes for v in lex._impacts.values())
        out["per-slot BM25 arrays"] += len(lex._state) + lex._doc_len.itemsize * len(lex._doc_len)
        if part.ivf is not None:
            ivf = part.ivf
            out["IVF reduced rows"] += sum(a.nbytes for a in (ivf.reduced, ivf.tail) if a is not None)
            out["IVF lists"] += ivf.order.nbytes + ivf.offsets.nbytes + ivf.centroids.nbytes + (
                ivf.basis.nbytes if ivf.basis is not None else 0)
        out["ids"] += sys.getsizeof(part.ids) + _strings(part.ids)
        out["live/neighbour arrays"] += part.live.nbytes + part.prev.nbytes + part.next.nbytes
    out["locations"] = sys.getsizeof(state.where._at) + sys.getsizeof(state.where._names)
    return out


def child(directory: Path, n: int, text_bytes: int, dim: int) -> None:
    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(30))
    from projections.serving.index import ServingIndex

    async def run() -> dict:
        import lancedb

        db = await lancedb.connect_async(str(directory))   # LanceDB's own start-up is not the index's
        table = await db.open_table("memories")
        await table.query().limit(10).to_arrow()
        gc.collect()
        before = _rss()
        index = ServingIndex(directory)
        t0 = time.perf_counter()
        assert await index.wait_ready(timeout_s=3600)
        load_s = time.perf_counter() - t0
        gc.collect()
        after = _rss()
        state = index._state
        assert state is not None
        parts = breakdown(state)
        biggest = max(state.parts.values(), key=lambda p: p.live_count)
        # exact float32 reference for the biggest namespace, read back from LanceDB
        data = await table.query().where(f"namespace = '{biggest.namespace}'").select(["id", "vector"]).to_arrow()
        ids = data.column("id").to_pylist()
        full = data.column("vector").combine_chunks().values.to_numpy(zero_copy_only=False).reshape(len(ids), dim)
        rng = np.random.default_rng(7)
        found = 0
        queries = 200
        took = []
        for q in range(queries):
            base = full[rng.integers(len(ids))]
            query = base + 0.5 * rng.standard_normal(dim).astype(np.float32) * np.abs(base).mean()
            query = (query / np.linalg.norm(query)).astype(np.float32)
            want = {ids[i] for i in np.argsort(-(full @ query))[:10]}
            t = time.perf_counter()
            got = await index.adense(query, [biggest.namespace], 10)
            took.append(time.perf_counter() - t)
            found += len(want & {m for m, _ in got})
        table.close()
        await index.close()
        return {"n": n, "rss_mb": (after - before) / 2**20, "per_memory": (after - before) / n,
                "text_per_memory": text_bytes / n, "load_s": load_s, "recall_at_10": found / (10 * queries),
                "biggest": biggest.live_count, "ivf": biggest.ivf is not None,
                "reduced": biggest.ivf is not None and biggest.ivf.reduced is not None,
                "dense_p50_ms": 1000 * float(np.median(took)), "parts": parts}

    print(json.dumps(asyncio.run(run())))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", default="20000,100000")
    parser.add_argument("--dim", type=int, default=512)
    parser.add_argument("--child", nargs=3, metavar=("DIR", "N", "TEXT_BYTES"))
    args = parser.parse_args()
    if args.child:
        child(Path(args.child[0]), int(args.child[1]), int(args.child[2]), args.dim)
        return 0
    print(f"serving index memory, dim {args.dim}; load average {os.getloadavg()[0]:.2f}")
    print(f"{'memories':>10} {'RSS MB':>8} {'B/memory':>9} {'text B':>7} {'f32 ref B':>9} {'load s':>7} "
          f"{'recall@10':>9} {'dense p50':>9}  biggest namespace")
    for n in [int(x) for x in args.n.split(",")]:
        work = Path(tempfile.mkdtemp(prefix="zhiyi-bench-servmem-"))
        try:
            text_bytes = write_table(work, n, args.dim)
            out = subprocess.run([sys.executable, __file__, "--dim", str(args.dim), "--child", str(work), str(n),
                                  str(text_bytes)], check=True, capture_output=True, text=True)
            r = json.loads(out.stdout.strip().splitlines()[-1])
            print(f"{n:>10,} {r['rss_mb']:>8.0f} {r['per_memory']:>9,.0f} {r['text_per_memory']:>7.0f} "
                  f"{4 * args.dim:>9,} {r['load_s']:>7.1f} {r['recall_at_10']:>9.3f} {r['dense_p50_ms']:>7.2f}ms"
                  f"  {r['biggest']:,} rows, ivf={r['ivf']}, reduced={r['reduced']}", flush=True)
            listed = sum(r["parts"].values())
            print("    " + ", ".join(f"{k} {v / n:,.0f}" for k, v in r["parts"].items() if v)
                  + f"; listed {listed / n:,.0f} B a memory, the rest of the RSS growth "
                  f"{r['per_memory'] - listed / n:,.0f} (allocator overhead, Python objects not listed)", flush=True)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
