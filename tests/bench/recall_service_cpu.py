"""CPU per recall of the recall service alone (no HTTP, no embedding process), over a data dir that
tests/bench/recall_reuse.py ingested: the serving index loaded in process, the synonyms, activity
(recall counts) and graph (prefetch partners) readers as the gateway wires them, the query vectors
computed up front. Prints the mean CPU per recall, a per-stage split with --stages (cProfile), and
a digest of the answers (the same digest = the same answers: a change must not move it unless it
changes ranking on purpose).

    OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/bench/recall_service_cpu.py --dir /tmp/zr/20k [--stages]
        [--scope NS,NS,...]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import hashlib
import os
import pstats
import random
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from recall import query  # noqa: E402

from projections.activity.reader import ActivityReader, RecallCounts  # noqa: E402
from projections.graph.reader import GraphReader  # noqa: E402
from projections.memories.reader import MemoriesReader  # noqa: E402
from projections.queries.recall.service import RecallRequest, RecallService  # noqa: E402
from projections.serving.prefetch import PrefetchPartners  # noqa: E402
from projections.synonyms.reader import SynonymsReader  # noqa: E402


class Precomputed:
    model_id = "use-precomputed"

    def __init__(self, vectors: dict[str, np.ndarray]) -> None:
        self.vectors = vectors

    def embed(self, texts: list[str]) -> list[np.ndarray]:
        return [self.vectors[t] for t in texts]


async def main(args) -> None:
    from projections.models.use_embedder import LocalUSEEmbedder

    data = Path(args.dir) / "data" / "projections"
    rng = random.Random(11)
    queries = [query(rng, i) for i in range(args.queries)]
    model = LocalUSEEmbedder(threads=1)
    t = time.process_time()
    vecs = {}
    for lo in range(0, len(queries), 64):
        batch = queries[lo:lo + 64]
        vecs.update(zip(batch, np.asarray(model.embed(batch), dtype=np.float32)))
    embed_ms = (time.process_time() - t) * 1000 / len(queries)
    t = time.process_time()
    for q in queries[:50]:
        model.embed([q])
    single_ms = (time.process_time() - t) * 1000 / 50
    print(f"query embedding CPU: {single_ms:.2f} ms one at a time, {embed_ms:.2f} ms each in batches of 64")
    activity, graph = ActivityReader(data / "activity"), GraphReader(data / "graph")
    counts, partners = RecallCounts(activity), PrefetchPartners(graph)
    service = RecallService(MemoriesReader(data / "memories"), Precomputed(vecs), synonyms=SynonymsReader(data / "synonyms"),
                            serving=True, activity=counts, graph=graph, partners=partners)
    await service.load(wait=True)
    scope = args.scope.split(",")
    for q in queries[:20]:   # warm: followers loaded, impacts cached
        await service.recall(RecallRequest(query=q, namespaces=scope))
        counts.recalls([]), partners.prefetch([], scope)
    await asyncio.sleep(0.5)

    per_query = [float("inf")] * len(queries)

    async def run() -> list:
        out = []
        for i, q in enumerate(queries):
            t = time.thread_time()
            hits = await service.recall(RecallRequest(query=q, namespaces=scope))
            await service.prefetch([h.memory_id for h in hits[:3]], scope)
            per_query[i] = min(per_query[i], time.thread_time() - t)
            out.append([(h.memory_id, round(h.score, 6)) for h in hits])
        return out

    prof = cProfile.Profile() if args.stages else None
    cpus, walls = [], []
    for _ in range(args.repeat):   # the least CPU of the rounds: the machine's other load only ever adds
        t, w = time.thread_time(), time.perf_counter()
        if prof:
            prof.enable()
        answers = await run()
        if prof:
            prof.disable()
        cpus.append((time.thread_time() - t) * 1000 / len(queries))
        walls.append((time.perf_counter() - w) * 1000 / len(queries))
    digest = hashlib.sha256(repr([[m for m, _ in a] for a in answers]).encode()).hexdigest()[:16]
    print(f"{len(queries)} recalls x {args.repeat}: {min(cpus):.3f} ms CPU (least of the rounds; the loop's "
          f"thread), {sum(per_query) * 1000 / len(queries):.3f} ms (each query's least), {min(walls):.3f} ms wall "
          f"each; answers digest {digest}")
    if prof:
        pstats.Stats(prof).sort_stats("cumulative").print_stats(args.stages_top)
    if args.concurrency > 1:
        await concurrent(args, data, queries, scope, counts, graph, partners)
    await service.close()
    await counts.close()
    await partners.close()


async def concurrent(args, data: Path, queries: list[str], scope: list[str], counts, graph, partners) -> None:
    """`--concurrency` recalls at a time with the gateway's query embedder (the model in a child
    process): the loop thread's and the child's CPU per recall, and recalls/s with the loop
    saturated (as the gateway's under load, less HTTP)."""
    from projections.models.embedding_process import ProcessEmbedder

    embedder = ProcessEmbedder(threads=1)
    await asyncio.to_thread(embedder.warm_up)
    child = embedder._proc.pid
    service = RecallService(MemoriesReader(data / "memories"), embedder, synonyms=SynonymsReader(data / "synonyms"),
                            serving=True, activity=counts, graph=graph, partners=partners, query_embedder=embedder)
    await service.load(wait=True)
    hz = os.sysconf("SC_CLK_TCK")

    def child_ticks() -> int:
        fields = Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])

    for round_ in range(args.rounds):
        service.queries._lru.clear()   # every query embedded again
        todo = iter(queries[round_ * 97 % len(queries):] + queries[:round_ * 97 % len(queries)])
        done = 0

        async def worker() -> None:
            nonlocal done
            for q in todo:
                await service.recall(RecallRequest(query=q, namespaces=scope))
                done += 1

        t, w, c = time.thread_time(), time.perf_counter(), child_ticks()
        await asyncio.gather(*(worker() for _ in range(args.concurrency)))
        wall = time.perf_counter() - w
        print(f"c={args.concurrency} round {round_}: {done / wall:,.0f} recalls/s, loop thread "
              f"{(time.thread_time() - t) * 1000 / done:.2f} ms, embedder {(child_ticks() - c) / hz * 1000 / done:.2f} ms "
              "per recall", flush=True)
    await service.close()
    embedder.close()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--dir", required=True)
    p.add_argument("--queries", type=int, default=500)
    p.add_argument("--scope", default="bench-main,bench-ephemeral,shared",
                   help="the namespaces searched (million.py's data dir: bench0-main,bench0-ephemeral,shared)")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--concurrency", type=int, default=1, help="then rounds of recalls at this concurrency")
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--stages", action="store_true")
    p.add_argument("--stages-top", type=int, default=45)
    asyncio.run(main(p.parse_args()))
