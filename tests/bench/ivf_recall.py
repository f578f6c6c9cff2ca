"""recall@10 of the serving index's dense search against an exact scan, on a real data dir (issue 19,
part 1: "recall@10 against exact search >= 0.99"): a script, not a pytest test.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/bench/ivf_recall.py --data-dir /tmp/m19/data \\
        [--queries 300] [--spec scan_fraction=0.06,min_probe=8 --spec scan_fraction=0.10] [--pooled]

The data dir is a zhiyi data dir whose memories projection holds real vectors, e.g. the `data/` of a
`tests/bench/million.py --data-dir DIR` run. Queries are million.py's query texts (English and
Chinese), embedded with the offline model (USE). For each `--spec` (IvfParams fields; none: the
defaults) the serving index is loaded with those parameters and, for three scopes (the biggest
namespace alone, the two biggest together, every namespace), each query's dense top 10 is compared with
an exact scan of the same vectors (each namespace's int8 vectors, every live row): mean recall@10, the
share of queries with the same top 1, and the search's p50. `--pooled` also puts every memory into
one IVF trained with the same parameters (the size of one namespace at 1M), searched alone.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np  # noqa: E402
import structlog  # noqa: E402
from _harness import percentile  # noqa: E402
from million_phases import query  # noqa: E402

from projections.core.registry import projection_dir  # noqa: E402
from projections.models.use_embedder import LocalUSEEmbedder  # noqa: E402
from projections.serving.dense import IvfParams, exact_top, train_ivf  # noqa: E402
from projections.serving.index import ServingIndex  # noqa: E402


def params(spec: str) -> IvfParams:
    fields = {}
    for item in filter(None, spec.split(",")):
        name, value = item.split("=")
        fields[name] = float(value) if "." in value else int(value)
    return IvfParams(**fields)


def exact(index: ServingIndex, q: np.ndarray, scope: list[str]) -> list[str]:
    state = index._state
    assert state is not None
    found = []
    for ns in scope:
        p = state.parts[ns]
        found += [(p.ids[slot], cos) for slot, cos in exact_top(p.vectors, q, 10, p.live[:p.size], size=p.size)]
    found.sort(key=lambda hit: (-hit[1], hit[0]))
    return [mid for mid, _ in found[:10]]


def line(label: str, ms: list[float], recall: list[float], top1: list[bool]) -> str:
    return (f"  {label:<34} recall@10 {np.mean(recall):.4f}  same top 1 {np.mean(top1):.3f}  "
            f"p50 {percentile(ms, 50):.3f} ms")


async def main(args: argparse.Namespace) -> None:
    rng = random.Random(args.seed)
    texts = [query(rng, 10 ** 7 + i) for i in range(args.queries)]
    vectors = np.asarray(LocalUSEEmbedder().embed(texts), dtype=np.float32)
    directory = projection_dir(Path(args.data_dir), "memories")
    for spec in args.spec or [""]:
        ivf = params(spec)
        index = ServingIndex(directory, ivf=ivf)
        assert await index.wait_ready(timeout_s=3600)
        state = index._state
        assert state is not None
        sizes = sorted(((p.live_count, ns) for ns, p in state.parts.items()), reverse=True)
        print(f"{spec or 'defaults'}: scan_fraction {ivf.scan_fraction}, min_probe {ivf.min_probe}, "
              f"rerank {ivf.rerank}; {len(sizes)} namespaces, {sum(n for n, _ in sizes):,} live", flush=True)
        scopes = {"biggest namespace": [sizes[0][1]], "two biggest": [ns for _, ns in sizes[:2]],
                  "every namespace": [ns for _, ns in sizes]}
        for label, scope in scopes.items():
            ms, recall, top1 = [], [], []
            for q in vectors:
                t = time.perf_counter()
                got = [mid for mid, _ in (await index.adense(q, scope, 50))[:10]]
                ms.append((time.perf_counter() - t) * 1000)
                want = exact(index, q, scope)
                recall.append(len(set(got) & set(want)) / 10)
                top1.append(bool(got) and got[0] == want[0])
            lists = ", ".join(f"{len(state.parts[ns].ivf.centroids) if state.parts[ns].ivf else 0}" for ns in scope[:3])
            print(line(f"{label} ({sum(state.parts[ns].live_count for ns in scope):,} rows; lists {lists}"
                       f"{'…' if len(scope) > 3 else ''})", ms, recall, top1), flush=True)
        if args.pooled:
            rows = np.concatenate([p.vectors.take(np.flatnonzero(p.live[:p.size])) for p in state.parts.values()])
            live = np.ones(len(rows), dtype=bool)
            pooled = train_ivf(rows, live, IvfParams(**{**{f: getattr(ivf, f) for f in ivf.__dataclass_fields__},
                                                        "min_rows": 1}))
            ms, recall, top1 = [], [], []
            for q in vectors:
                t = time.perf_counter()
                got = [slot for slot, _ in pooled.search(rows, len(rows), q, 10, live, ivf)]
                ms.append((time.perf_counter() - t) * 1000)
                want = [slot for slot, _ in exact_top(rows, q, 10, live)]
                recall.append(len(set(got) & set(want)) / 10)
                top1.append(bool(got) and got[0] == want[0])
            print(line(f"one IVF of every memory ({len(rows):,} rows, {len(pooled.centroids)} lists)", ms, recall, top1),
                  flush=True)
        await index.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data-dir", required=True, help="a zhiyi data dir (e.g. million.py's DIR/data)")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--spec", action="append", help="IvfParams fields, e.g. scan_fraction=0.06,min_probe=8")
    parser.add_argument("--pooled", action="store_true", help="also one IVF of every memory")
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(30))
    asyncio.run(main(parser.parse_args()))
