"""Benchmark the knowledge graph (a script, not a pytest test).

    OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/bench/graph.py [--memories 5000] [--nodes 10000] [--edges 50000]

(a) projection: N `memory.committed` events (English and Chinese, with services, ports, paths,
    versions and names to extract) plus one `recall.served` per 5 commits are appended to a private
    Redis and folded by the graph projector from a cold start: events/s, with the memories
    projector's fold of the same events (hash embedder, no model) in the same run as a baseline;
(b) navigation: a graph of `--nodes` nodes and `--edges` weighted edges (random, a few hubs) in
    the seed 2.5.1 schema; p50/p99 of `navigate` (bidirectional BFS, max 3 hops) over 200 random
    pairs, and of a one-hop pattern query. Target: navigate p50 <= 10 ms at 10k nodes / 50k edges.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import structlog  # noqa: E402
from _harness import percentile, private_redis  # noqa: E402

from events.catalogue import MemoryCommitted, RecallServed, new_event  # noqa: E402
from events.redis.client import connect  # noqa: E402
from events.redis.store import EventStore  # noqa: E402
from projections.graph.projector import GraphProjector  # noqa: E402
from tests.hash_embedder import HashEmbedder  # noqa: E402
from projections.memories.projector import MemoriesProjector  # noqa: E402
from projections.graph.reader import GraphReader  # noqa: E402
from projections.graph.navigate import navigate  # noqa: E402
from projections.graph.query import run as run_query  # noqa: E402
from projections.graph.schema import GRAPH_SCHEMA  # noqa: E402
from tests.graph_tables import insert_edges  # noqa: E402
from projections.core.runner import ProjectionRunner  # noqa: E402

SERVICES = ["Nginx", "Redis", "ComfyUI", "Grafana", "Postgres", "LanceDB", "Kafka", "Prometheus", "Vault", "Jenkins"]
HOSTS = ["gpu-box", "db-01", "edge-eu", "ci-runner", "staging", "prod-api"]
PATHS = ["/etc/nginx/nginx.conf", "/srv/export", "/var/lib/redis", "~/.config/zhiyi.toml", "/opt/comfyui/models"]
ZH = ["运维团队决定把{svc}迁移到新机房", "{svc}的配置文件在{path}", "牧尘要求{svc}每天凌晨备份", "{svc}版本升级到{ver}之后要重启"]


def memory_text(rng: random.Random, i: int) -> str:
    svc, host, path = rng.choice(SERVICES), rng.choice(HOSTS), rng.choice(PATHS)
    ver = f"{rng.randint(1, 9)}.{rng.randint(0, 20)}.{rng.randint(0, 9)}"
    if i % 4 == 3:
        return rng.choice(ZH).format(svc=svc, path=path, ver=ver)
    return rng.choice([
        f"{svc} on {host} listens on port {rng.randint(1024, 9999)}",
        f"{svc} reads its settings from {path} since v{ver}",
        f"the {host} team pinned {svc} to {ver} after the outage",
        f"restart {svc} on {host} whenever {rng.choice(SERVICES)} is upgraded",
    ])


async def projection(n: int, rng: random.Random) -> None:
    with private_redis() as url, tempfile.TemporaryDirectory() as tmp:
        store = EventStore(connect(url), origin="bench")
        ids = [f"m{i}" for i in range(n)]
        events = []
        for i, mid in enumerate(ids):
            deps = (rng.choice(ids[:i]),) if i > 10 and rng.random() < 0.2 else ()
            ns = "shared" if i % 3 == 0 else "alice-main"
            events.append(new_event(MemoryCommitted(mid, memory_text(rng, i), ns, "fact", "system_fact",
                                                    depends_on=deps), ns=ns, agent="alice"))
            if i % 5 == 4:
                top = tuple(rng.sample(ids[: i + 1], 5))
                events.append(new_event(RecallServed("q", ("alice-main", "shared"), top, (0.5,) * 5), ns="alice-main",
                                        agent="alice"))
        for lo in range(0, len(events), 1000):
            await store.append(events[lo:lo + 1000])
        total = len(events)
        for name, projector in (("graph", GraphProjector(Path(tmp) / "graph")),
                                ("memories (hash embedder, baseline)",
                                 MemoriesProjector(Path(tmp) / "memories", HashEmbedder(dim=64), serving_indexes=False,
                                                   vector_index_min_rows=0))):
            started = time.perf_counter()
            await ProjectionRunner(store, projector, publish=False).catch_up()
            took = time.perf_counter() - started
            await projector.close()
            print(f"projection {name}: {total:,} events ({n:,} commits) in {took:.2f} s = {total / took:,.0f} events/s")
        conn = sqlite3.connect(Path(tmp) / "graph" / "graph.db")
        nodes = conn.execute("SELECT COUNT(*) FROM graph_nodes").fetchone()[0]
        edges = dict(conn.execute("SELECT relation_type, COUNT(*) FROM graph_edges GROUP BY relation_type"))
        print(f"  graph built: {nodes:,} nodes, edges {edges}")
        conn.close()
        await store.redis.aclose()


def synthetic_graph(path: Path, n_nodes: int, n_edges: int, rng: random.Random) -> list[str]:
    conn = sqlite3.connect(path)
    conn.executescript(GRAPH_SCHEMA)
    ids = [f"n{i}" for i in range(n_nodes)]
    conn.executemany("INSERT INTO graph_nodes (id, type, label, namespace, properties, created_at, last_updated_at) "
                     "VALUES (?, ?, ?, ?, '{}', '', '')",
                     [(i, "entity" if k % 3 else "fact", f"label {k}", "shared" if k % 2 else "alice-main")
                      for k, i in enumerate(ids)])
    hubs = ids[:20]
    seen, rows = set(), []
    while len(rows) < n_edges:
        a = rng.choice(hubs) if rng.random() < 0.1 else rng.choice(ids)
        b = rng.choice(ids)
        rel = rng.choice(["REFERENCES", "DEPENDS_ON", "CO_OCCURS"])
        if a == b or (rel, a, b) in seen:
            continue
        seen.add((rel, a, b))
        rows.append((f"{rel}:{a}:{b}", a, b, rel, round(rng.uniform(0.1, 1.0), 3), "shared", 1, ""))
    insert_edges(conn, ("id", "source_id", "target_id", "relation_type", "weight", "namespace", "evidence_count",
                        "created_at"), rows)
    conn.commit()
    conn.close()
    return ids


def navigation(n_nodes: int, n_edges: int, rng: random.Random) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "graph.db"
        ids = synthetic_graph(path, n_nodes, n_edges, rng)
        conn = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True)
        scope = ["shared", "alice-main"]
        pairs = [(rng.choice(ids), rng.choice(ids)) for _ in range(200)]
        for a, b in pairs[:20]:
            navigate(conn, a, b, scope)
        times, found = [], 0
        for a, b in pairs:
            t = time.perf_counter()
            found += bool(navigate(conn, a, b, scope))
            times.append((time.perf_counter() - t) * 1000)
        print(f"navigate at {n_nodes:,} nodes / {n_edges:,} edges, 200 random pairs, max 3 hops: "
              f"p50 {percentile(times, 50):.2f} ms, p99 {percentile(times, 99):.2f} ms (target p50 <= 10); "
              f"{found} pairs connected")
        qtimes = []
        for a, _ in pairs:
            t = time.perf_counter()
            run_query(conn, f"MATCH (x {{id: '{a}'}})-[r]->(y) RETURN y.id, r.weight LIMIT 50", scope)
            qtimes.append((time.perf_counter() - t) * 1000)
        print(f"pattern query, one hop from a node: p50 {percentile(qtimes, 50):.2f} ms, "
              f"p99 {percentile(qtimes, 99):.2f} ms")
        conn.close()
        # what every recall pays: prefetch over its results, and the expansion of a sparse one
        reader = GraphReader(Path(tmp))
        pf, nb = [], []
        for _ in range(200):
            hits = rng.sample(ids, 10)
            t = time.perf_counter()
            reader.prefetch(hits, scope)
            pf.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            reader.neighbours(hits[:3], scope)
            nb.append((time.perf_counter() - t) * 1000)
        reader.close()
        print(f"recall-path lookups: prefetch of 10 results p50 {percentile(pf, 50):.2f} ms, "
              f"p99 {percentile(pf, 99):.2f} ms; expansion of 3 hits p50 {percentile(nb, 50):.2f} ms, "
              f"p99 {percentile(nb, 99):.2f} ms")


async def main(args: argparse.Namespace) -> None:
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(30))
    rng = random.Random(11)
    await projection(args.memories, rng)
    navigation(args.nodes, args.edges, rng)


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--memories", type=int, default=5000)
    p.add_argument("--nodes", type=int, default=10_000)
    p.add_argument("--edges", type=int, default=50_000)
    asyncio.run(main(p.parse_args()))
