"""Push latency benchmark: from an event's append to its receipt by WebSocket clients (seed 2.7).

    OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/bench/push.py [--clients 100] [--seconds 20] [--rate 20]

Processes: a private redis-server; `zhiyi up` (its gateway with the push hub, reactions and scheduler,
and its `zhiyi project` child with every projector), log level warning, rate limits off; this process:
the clients (aiohttp, one event loop) and the load. Latency is the receipt time minus the millisecond
part of the message's position (Redis TIME at the append: the same machine clock), so it covers the
append, the hub's XREAD, routing (the write-side index lookups), the queue and the socket.

Measured:
  1. unicast: --clients agents, each registered, with one memory and one socket open; corrections of a
     random agent's memory open-loop at --rate/s for --seconds; each correction's `memory.updated`
     reaches its owner. p50/p90/p99/max.
  2. broadcast: `POST /api/v1/admin/consolidate` three times; `deep.consolidation.done` reaches every
     client: p50/p99 over all receipts.
  3. baseline, in the same run: a bare XREAD BLOCK reader in this process on the same stream, the floor any
     tailing reader pays; the ratio of the unicast p50 to it is printed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.bench._harness import percentile, private_redis, zhiyi_process  # noqa: E402

ADMIN = "bench-admin-key"


def _ms(position: str) -> int:
    return int(position.split("-")[0])


def _summary(name: str, values: list[float]) -> str:
    return (f"{name}: n={len(values)} p50 {percentile(values, 50):.1f} ms, p90 {percentile(values, 90):.1f} ms, "
            f"p99 {percentile(values, 99):.1f} ms, max {max(values) if values else float('nan'):.1f} ms")


async def _client(session, base: str, agent: str, key: str, lat: dict[str, list[float]], ready: asyncio.Event,
                  counter: list[int], total: int) -> None:
    async with session.ws_connect(f"{base}/api/v1/ws/{agent}", headers={"X-API-Key": key}) as ws:
        first = json.loads((await ws.receive()).data)
        assert first["type"] == "connected", first
        counter[0] += 1
        if counter[0] == total:
            ready.set()
        async for msg in ws:
            if msg.type != aiohttp.WSMsgType.TEXT:
                break
            now = time.time() * 1000
            body = json.loads(msg.data)
            lat.setdefault(body["type"], []).append(now - _ms(body["position"]))


async def _bare_reader(redis_url: str, lat: list[float], stop: asyncio.Event) -> None:
    from redis.asyncio import Redis

    redis = Redis.from_url(redis_url)
    last = (await redis.xrevrange("zhiyi:events", count=1) or [[b"0-0"]])[0][0]
    while not stop.is_set():
        reply = await redis.xread({"zhiyi:events": last}, block=500, count=500)
        now = time.time() * 1000
        for _, items in reply or []:
            for pos, _ in items:
                lat.append(now - _ms(pos.decode()))
                last = pos
    await redis.aclose()


async def run(args) -> None:
    with private_redis() as redis_url, tempfile.TemporaryDirectory(prefix="zhiyi-bench-push-") as tmp:
        with zhiyi_process("up", redis_url, Path(tmp) / "data", ADMIN,
                           {"ZHIYI_TICK_INTERVAL_S": "0"}) as base:
            admin = {"X-API-Key": ADMIN}
            async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0)) as http:
                agents: dict[str, tuple[str, str]] = {}
                for i in range(args.clients):
                    agent = f"agent-{i:03d}"
                    async with http.post(f"{base}/api/v1/agents/register", json={"agent_id": agent},
                                         headers=admin) as r:
                        key = (await r.json())["api_key"]
                    async with http.post(f"{base}/api/v1/commit", headers={"X-API-Key": key},
                                         json={"content": f"{agent} builds on build server build-{i:03d}"}) as r:
                        agents[agent] = (key, (await r.json())["memory_id"])
                lat: dict[str, list[float]] = {}
                ready, counter = asyncio.Event(), [0]
                clients = [asyncio.create_task(_client(http, base, a, k, lat, ready, counter, args.clients))
                           for a, (k, _) in agents.items()]
                await asyncio.wait_for(ready.wait(), 60)
                print(f"{args.clients} clients connected", flush=True)
                bare: list[float] = []
                stop = asyncio.Event()
                reader = asyncio.create_task(_bare_reader(redis_url, bare, stop))
                await asyncio.sleep(0.5)
                sent, t0, n = 0, time.monotonic(), int(args.seconds * args.rate)
                pending = set()
                for i in range(n):
                    await asyncio.sleep(max(0.0, t0 + i / args.rate - time.monotonic()))
                    agent = random.choice(list(agents))
                    key, mid = agents[agent]
                    pending.add(asyncio.create_task(http.post(
                        f"{base}/api/v1/feedback/correct", headers={"X-API-Key": key},
                        json={"memory_id": mid, "content": f"{agent} builds on build-{i}", "reason": "moved"})))
                    sent += 1
                for task in pending:
                    (await task).release()
                await asyncio.sleep(2)
                unicast = list(lat.get("memory.updated", []))
                for _ in range(3):
                    async with http.post(f"{base}/api/v1/admin/consolidate", json={}, headers=admin) as r:
                        assert r.status == 200, await r.text()
                    await asyncio.sleep(1)
                stop.set()
                await reader
                for task in clients:
                    task.cancel()
                print(f"corrections sent: {sent} at {args.rate}/s; memory.updated received: {len(unicast)}")
                print(_summary("unicast  memory.updated (append -> client)", unicast))
                print(_summary("broadcast deep.consolidation.done (append -> each client)",
                               lat.get("deep.consolidation.done", [])))
                print(_summary("baseline bare XREAD BLOCK reader (append -> read)", bare))
                if bare and unicast:
                    print(f"ratio unicast p50 / bare p50: {percentile(unicast, 50) / max(percentile(bare, 50), 0.1):.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--rate", type=float, default=20, help="corrections per second")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
