"""The 1M benchmark (issue 19, part 5): run on demand, not in `make test`.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/bench/million.py [--scale 100000,1000000] [--runs 3]
        [--data-dir DIR] [--json out.json] [--queries 300] [--seconds 10]
    smoke:  ... tests/bench/million.py --scale 2000,10000 --runs 1

A private redis-server (AOF everysec, its dir under the work dir) and a real `zhiyi up` (gateway +
projector child + query-embedding child; the default offline USE model; `ZHIYI_RATE_LIMITS=off`,
`ZHIYI_NO_REACTIONS=1` and `ZHIYI_CONFLICT_CHECK=0` unless --reactions / --conflict-check: the policies
and the per-commit neighbour search would double the ingest's embedding work). Nine agents (--agents).
For each scale point, in order:
- ingest up to it through /batch-commit (batches of 1000, each agent's own key, the agents in turn; one
  memory in ten into `shared`, so 100k of 1M; English and Chinese texts of 40-300 characters) into a fresh
  data dir (a cold embedding cache), each batch followed by its log mix appended straight to the log:
  60% commits, 30% `recall.served`, 10% others (feedback, corrections, entities, episodes, deletes, stale,
  validated); then wait until every projector has folded it: the projection rate (memories/s and
  events/s, from the first batch to the last fold);
- measure, --runs times, once /health says the serving index serves at the memories checkpoint (as a
  readiness check would wait; medians printed, the load average of each run beside each figure): RSS of the
  gateway process alone, of its children (projectors, query embedder) and of redis; disk (projections,
  embedding cache, redis AOF; the graph, and the LanceDB tables' older versions apart: kept 10 minutes);
  recall p50/p99 over HTTP at c=1 and recalls/s at c=16 (cache off, distinct queries) for two scopes
  of agent bench0, each printed with its live memories: "own" (the default: its namespaces + `shared`,
  ~200k at 1M) and "all" (every agent's -main added by include_namespaces: every
  memory); the projector child's CPU per recall over each c=16 burst until its audits are folded (the
  burst starts once the projectors are at rest; their rest rate is printed, and the figure less it); replay events/s: `projections.core.replay.rebuild` (what
  `zhiyi replay --into` runs: every projection, their maintain and digests, graph in a second process) in
  this process with the data dir's warm embedding cache, and (--no-replay-cli: not) `zhiyi replay --into SCRATCH` as a process, its
  start-up included; and the in-process references: an exact float32 numpy scan of each scope's live
  vectors, a fold-only replay (the memories projector alone, no compaction or index, batches of 500).
Then, the gateway stopped, --runs times on a fresh Redis and `zhiyi serve`: commits/s at c=16 and
batch-commit vs raw pipelined XADD of the same stream entries in the same batch sizes with the same
index writes (million_phases.commit_phase). Acceptance figures last, each with its target and PASS/FAIL:
RSS growth of the gateway alone between the first and the last point; recall p50/p99 at c=1, "own" scope,
at the last point; recalls/s at c=16 at the point nearest 100k, twice: "all" scope (every memory searched:
the issue's "at 100k" read strictly) and "own" scope (the default recall, 100k stored);
replay and projector CPU per recall ("own" burst) at the last point; commits and batch/raw.

--data-dir DIR keeps the work dir (data/, redis/, million.json: agents, counts); a later run with the
same DIR reuses it and ingests only up to the next point (a point already passed is measured at the
size the dir holds). --settle S: seconds to let maintenance run after an ingest (30).
Time: the projector child embeds every text once with USE (about 6 ms of CPU for a 40-300 character text
on this 2-core machine), so a 1M ingest takes about 2 hours on an idle machine; at 1M each run's
measures take ~10-15 minutes more (two replays of ~1.7M events, the fold-only reference, the recalls).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import signal
import statistics
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import aiohttp  # noqa: E402
import structlog  # noqa: E402
from _harness import pids_matching, private_redis, zhiyi_process  # noqa: E402

import million_phases as phases  # noqa: E402
from events.redis.client import connect  # noqa: E402
from events.redis.store import EventStore  # noqa: E402

ADMIN = phases.ADMIN
MB = 2 ** 20


def _load(runs: list[dict], key: str) -> str:
    return "load " + "/".join(f"{r[key]:.2f}" for r in runs)


def _med(runs: list[dict], *path: str) -> float:
    def get(r: dict) -> float:
        for p in path:
            r = r[p]
        return float(r)   # type: ignore[arg-type]
    return statistics.median(get(r) for r in runs)


def print_point(pt: dict) -> None:
    runs, n, ing = pt["runs"], pt["n"], pt.get("ingest")
    print(f"\n== {n:,} memories stored; median of {len(runs)} run(s)", flush=True)
    if ing:
        print(f"  projection rate (ingest {ing['memories']:,} memories, {ing['events']:,} events, cold cache): "
              f"{ing['memories_per_s']:,.0f} memories/s, {ing['events_per_s']:,.0f} events/s "
              f"(HTTP commits done in {ing['commit_s']:.0f} s, folded by {ing['wall_s']:.0f} s)   load {ing['load']:.2f}")
    labels = sorted({k for r in runs for k in r["rss"]})
    print("  RSS: " + ", ".join(f"{k} {_med(runs, 'rss', k) / MB:,.0f} MB" for k in labels)
          + f"   gateway alone {_med(runs, 'rss', 'gateway') / n:,.0f} B per memory   {_load(runs, 'load_rss')}")
    d = {k: _med(runs, "disk", k) for k in runs[0]["disk"]}
    print(f"  disk: total {d['.'] / MB:,.0f} MB = {d['.'] / n:,.0f} B per memory (projections "
          f"{d['data/projections'] / MB:,.0f} MB, embedding cache {d['data/cache'] / MB:,.0f} MB, redis "
          f"{d['redis'] / MB:,.0f} MB)")
    if "lance" in d:
        old_versions = d["lance"] - d["lance_latest"]
        print(f"    of the projections: graph {d['data/projections/graph'] / MB:,.0f} MB, LanceDB tables "
              f"{d['lance'] / MB:,.0f} MB, {old_versions / MB:,.0f} MB of it older versions (pruned once older "
              f"than the 10-minute retention); without those {(d['.'] - old_versions) / n:,.0f} B per memory")
    for name, what in (("own", "bench0's default scope: own namespaces + shared"),
                       ("all", "+ every agent's -main by include_namespaces: every memory")):
        def m(*path: str) -> float:
            return _med(runs, "recall", name, *path)
        print(f"  recall, {what}: scope {m('scope'):,.0f} live memories")
        print(f"    c=1: p50 {m('p50'):.2f} ms, p99 {m('p99'):.2f} ms (server took_ms p50 {m('took_p50'):.2f})   "
              f"{_load([r['recall'][name] for r in runs], 'load_c1')}")
        print(f"      reference, exact f32 numpy scan in-process ({_med(runs, 'ref_scan', name, 'rows'):,.0f} rows): "
              f"p50 {_med(runs, 'ref_scan', name, 'p50_ms'):.2f} ms, p99 {_med(runs, 'ref_scan', name, 'p99_ms'):.2f} ms")
        print(f"    c=16: {m('c16'):,.0f} recalls/s (p50 {m('c16_p50'):.1f} ms)   "
              f"{_load([r['recall'][name] for r in runs], 'load_c16')}")
        print(f"    CPU per recall (the c=16 burst until its audits are folded): projectors {m('proj_cpu_raw_ms'):.3f} ms "
              f"({m('proj_cpu_ms'):.3f} ms less their rest rate, {m('proj_rest_ms_per_s'):.1f} ms/s), "
              f"gateway {m('gw_cpu_ms'):.3f} ms")
    if "replay" not in runs[0]:
        print("  replay: not measured (--no-replay)", flush=True)
        return
    print(f"  replay (projections.core.replay.rebuild, what zhiyi replay --into runs: every projection, warm cache, "
          f"graph in a second process): {_med(runs, 'replay', 'events'):,.0f} events in {_med(runs, 'replay', 'wall_s'):.1f} s = "
          f"{_med(runs, 'replay', 'events_per_s'):,.0f} events/s (cache misses {_med(runs, 'replay', 'misses'):,.0f})"
          f"   {_load(runs, 'load_replay')}")
    if "replay_cli" in runs[0]:
        print(f"      zhiyi replay --into as a process, start-up included: {_med(runs, 'replay_cli', 'wall_s'):.1f} s = "
              f"{_med(runs, 'replay_cli', 'events_per_s'):,.0f} events/s")
    print(f"      reference, in-process fold-only (memories projector alone, batches of 500): "
          f"{_med(runs, 'ref_fold', 'events_per_s'):,.0f} events/s (cache misses "
          f"{_med(runs, 'ref_fold', 'misses'):,.0f})", flush=True)


def acceptance(points: list[dict], commit: list[dict], text_per_memory: float) -> list[dict]:
    first, last = points[0], points[-1]
    near100k = min(points, key=lambda p: abs(p["n"] - 100_000))
    out = []

    def check(name: str, value: float | None, target: str, ok: bool | None, unit: str = "") -> None:
        out.append({"figure": name, "value": value, "target": target, "pass": bool(ok)})
        shown = "n/a" if value is None else f"{value:,.2f}{unit}" if unit == " ms" or value < 10 else f"{value:,.0f}{unit}"
        print(f"  {'PASS' if ok else 'FAIL'}  {name}: {shown}   (target {target})")

    print(f"\n== acceptance (issue 19); medians of {len(last['runs'])} run(s)")
    rss_target = 3072 + text_per_memory
    if last["n"] > first["n"]:
        grow = (_med(last["runs"], "rss", "gateway") - _med(first["runs"], "rss", "gateway")) / (last["n"] - first["n"])
        check(f"gateway RSS per memory, ({last['n']:,} - {first['n']:,}) growth", grow,
              f"<= 3 KB + text {text_per_memory:.0f} B = {rss_target:,.0f} B", grow <= rss_target, " B")
    else:
        check("gateway RSS per memory (needs two scale points)", None, f"<= {rss_target:,.0f} B", None)
    scope = f"{last['n']:,} stored, scope {_med(last['runs'], 'recall', 'own', 'scope'):,.0f}"
    p50, p99 = _med(last["runs"], "recall", "own", "p50"), _med(last["runs"], "recall", "own", "p99")
    check(f"recall p50, HTTP c=1 ({scope})", p50, "<= 10 ms", p50 <= 10, " ms")
    check(f"recall p99, HTTP c=1 ({scope})", p99, "<= 40 ms", p99 <= 40, " ms")
    # "at 100k": every stored memory searched (the strict reading), and the default scope of 100k stored
    for name in ("all", "own"):
        c16 = _med(near100k["runs"], "recall", name, "c16")
        check(f"recalls/s, c=16 ({near100k['n']:,} stored, {name} scope "
              f"{_med(near100k['runs'], 'recall', name, 'scope'):,.0f})", c16, ">= 300/s", c16 >= 300)
    if "replay" in last["runs"][0]:
        rep = _med(last["runs"], "replay", "events_per_s")
        check(f"replay events/s ({_med(last['runs'], 'replay', 'events'):,.0f} events)", rep, ">= 10,000", rep >= 10_000)
    else:
        check("replay events/s (--no-replay)", None, ">= 10,000", None)
    cpu = _med(last["runs"], "recall", "own", "proj_cpu_raw_ms")
    check(f"projector CPU per recall ({last['n']:,} stored)", cpu, "<= 0.5 ms", cpu <= 0.5, " ms")
    rate = statistics.median(c["c16"] for c in commit)
    check("commits/s, c=16, ZHIYI_RATE_LIMITS=off", rate, ">= 3,000/s", rate >= 3000)
    ratio = statistics.median(c["ratio"] for c in commit)
    check("batch-commit / raw pipelined XADD", ratio, ">= 0.7", ratio >= 0.7)
    return out


async def main(args, work: Path) -> dict:
    manifest = work / "million.json"
    state = json.loads(manifest.read_text()) if manifest.exists() else \
        {"committed": 0, "agents": [], "live": {}, "text_bytes": 0, "batch": args.batch, "ingests": {}}
    env = {"ZHIYI_NO_REACTIONS": "0" if args.reactions else "1",
           "ZHIYI_CONFLICT_CHECK": "1" if args.conflict_check else "0"}
    print(f"work dir {work} ({'reused: ' + format(state['committed'], ',') + ' memories' if state['committed'] else 'fresh'}); "
          f"scale points {args.scale}; runs {args.runs}; load {os.getloadavg()[0]:.2f}; gateway env {env}", flush=True)
    points: list[dict] = []
    with private_redis(workdir=work / "redis") as url, zhiyi_process("up", url, work / "data", ADMIN, env) as base:
        pids = {"gateway": pids_matching("gateway.cli.main up", f"--port {base.rsplit(':', 1)[1]}")[0],
                "redis": pids_matching("-server", f"127.0.0.1:{url.rsplit(':', 1)[1].split('/')[0]}")[0]}
        redis = connect(url)
        store = EventStore(redis, origin="bench-mix")
        await store.open_epoch(create=False)
        try:
            async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=64)) as s:
                for a in range(len(state["agents"]), args.agents):
                    async with s.post(f"{base}/api/v1/agents/register", json={"agent_id": f"bench{a}"},
                                      headers={"X-API-Key": ADMIN}) as r:
                        assert r.status == 201, await r.text()
                        body = await r.json()
                    state["agents"].append([f"bench{a}", body["api_key"],
                                            next(ns for ns in body["namespaces"] if ns.endswith("-main"))])
                manifest.write_text(json.dumps(state))
                await phases.projectors_ready(work / "data")   # the child loads its model first: not ingest time
                for point in args.scale:
                    if state["committed"] < point:
                        print(f"ingesting {state['committed']:,} -> {point:,} memories ...", flush=True)
                        state["ingests"][str(point)] = await phases.ingest(s, base, store, state, point, args.seed)
                        manifest.write_text(json.dumps(state))
                        print(f"  settling {args.settle:.0f} s (compaction, vector index, serving index IVF)", flush=True)
                        await asyncio.sleep(args.settle)
                    else:
                        await phases.caught_up(store, 3600, "start")
                    runs = []
                    for run in range(args.runs):
                        runs.append(await phases.measure(s, base, pids, store, state, work, url, args, run))
                        print(f"  run {run + 1}/{args.runs} at {state['committed']:,} done (load "
                              f"{os.getloadavg()[0]:.2f})", flush=True)
                    points.append({"n": state["committed"], "ingest": state["ingests"].get(str(point)), "runs": runs})
                    print_point(points[-1])
        finally:
            await redis.aclose()
    commit = []
    for run in range(args.runs):
        commit.append(await phases.commit_phase(args))
    print(f"\n== commit path (fresh Redis, zhiyi serve, rate limits off); median of {len(commit)} run(s)")
    med = {k: statistics.median(c[k] for c in commit) for k in commit[0]}
    print(f"  commits c=16 ({args.commit_seconds:.0f} s): {med['c16']:,.0f}/s   load "
          + "/".join(f"{c['load_c16']:.2f}" for c in commit))
    print(f"  batch-commit (batches of 1000): {med['batch']:,.0f} memories/s; reference, raw pipelined XADD of "
          f"the same {med['raw_events']:,.0f} entries + index writes, pre-encoded, same batches: {med['raw']:,.0f}/s; "
          f"ratio {med['ratio']:.2f}   load " + "/".join(f"{c['load_batch']:.2f}" for c in commit))
    text_per_memory = state["text_bytes"] / max(1, state["committed"])
    print(f"\n(texts: {text_per_memory:.0f} B per memory, UTF-8)")
    checks = acceptance(points, commit, text_per_memory)
    return {"points": points, "commit": commit, "acceptance": checks, "text_bytes_per_memory": text_per_memory,
            "args": {k: v for k, v in vars(args).items()}}


def cli() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scale", type=lambda s: sorted(int(x) for x in s.split(",")), default=[100_000, 1_000_000])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--data-dir", default="", help="keep the work dir here (reused by a later run)")
    p.add_argument("--json", default="", help="write every figure to this file")
    p.add_argument("--agents", type=int, default=9)
    p.add_argument("--batch", type=int, default=1000, help="entries per /batch-commit (a fresh dir only)")
    p.add_argument("--queries", type=int, default=300, help="recalls timed at c=1")
    p.add_argument("--seconds", type=float, default=10.0, help="the c=16 recall burst")
    p.add_argument("--settle", type=float, default=30.0, help="seconds to wait after an ingest (maintenance)")
    p.add_argument("--rest-seconds", type=float, default=5.0, help="the projectors' CPU at rest, before c=16")
    p.add_argument("--replay", action=argparse.BooleanOptionalAction, default=True,
                   help="replay measures (the in-process rebuild holds every projection: at 1M memories it needed "
                        "more than 15 GB and was killed on a 24 GB machine)")
    p.add_argument("--replay-cli", action=argparse.BooleanOptionalAction, default=True,
                   help="also time `zhiyi replay --into` as a process (start-up included)")
    p.add_argument("--ref-queries", type=int, default=100, help="exact-scan reference queries")
    p.add_argument("--commit-seconds", type=float, default=10.0)
    p.add_argument("--commit-batches", type=int, default=20, help="batches of 1000 for batch vs raw")
    p.add_argument("--reactions", action="store_true", help="run the reaction policies (off by default)")
    p.add_argument("--conflict-check", action="store_true", help="ZHIYI_CONFLICT_CHECK on (off by default)")
    p.add_argument("--seed", type=int, default=19)
    args = p.parse_args()
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(30))
    signal.signal(signal.SIGTERM, signal.default_int_handler)   # SIGTERM stops the processes as Ctrl-C does
    work = Path(args.data_dir).resolve() if args.data_dir else Path(tempfile.mkdtemp(prefix="zhiyi-bench-million-"))
    work.mkdir(parents=True, exist_ok=True)
    for left in work.glob("scratch-*"):   # a replay's scratch dir, left by a killed run
        shutil.rmtree(left, ignore_errors=True)
    try:
        out = asyncio.run(main(args, work))
        if args.json:
            Path(args.json).write_text(json.dumps(out, indent=1, default=str))
            print(f"\nfigures written to {args.json}")
    finally:
        if not args.data_dir:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(cli())
