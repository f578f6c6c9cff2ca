"""LAN replica benchmark: how far behind the primary a replica reads, and how fast it catches up after a
partition (a script, not a pytest test: it prints figures and asserts nothing, but exits 1 when something
is broken: a commit refused, a replica read that never answers 200, a replica that never catches up).

    OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/bench/replica.py [--seconds 20] [--partition-s 60]
        [--burst 300] [--samples 500] [--max-rate 500] [--rate R] [--light 0.25]

The issue's catch-up figure is after a 10-minute partition: `--partition-s 600` (over 20 minutes in
all here). The default, 60 s, keeps a run near 4 minutes on 2 cores. Whether the 256 MB replication
backlog of `zhiyi up --redis-bind` holds the partition decides partial or full resync: the bytes the
primary's replication stream grew by during each cut are printed next to it.

Processes, all on this machine, as tests/e2e/test_replica_lan.py runs them, each in a temp dir:
  - the primary, `zhiyi up --redis-bind 127.0.0.1`: its gateway (commit path, reactions), its
    `zhiyi project` child (every projector) and its embedded Redis (the log; repl-diskless-sync-delay 0);
  - the replica, `zhiyi replica`: one gateway running every projector in process, its embedded Redis
    `replicaof` the primary's (the replicated log) and its own state Redis;
  - this process: two TcpProxy (tests/tcp_proxy.py) every connection of the replica to the primary goes
    through (its Redis replication link, its HTTP link), cut for the partitions; the load generator
    (aiohttp); for the pre-warmed partition the embedding model (USE), once.
Both zhiyi processes run with ZHIYI_QUERY_EMBEDDING_PROCESS=0, ZHIYI_TICK_INTERVAL_S=0, log level
warning, conflict check and reactions on (the defaults). Commits are distinct memories of 4 agents
(`#i: ` and six random words of ~220, one in five Chinese); the passive validator answers each with
`memory.validated` events for the stored memories it restates (2-4 per commit, as many as with
tests/bench/data/facts.json's realistic facts), so rates are given in events/s and memories/s.
The machine is shared: each window prints the CPU seconds of every process above, the rest of the
machine's (`others`) and idle time.

Measured, in order:
  1. the primary's projection rate: a burst of --burst commits at concurrency 8 as fast as the HTTP API
     takes them; events/s and memories/s from the first commit's 201 until every projector of the
     primary's /health reached the log's last position, the log quiet for 1.5 s (the reactions append
     after a commit's 201). Also printed: the commit path's own rate, and when the projectors reached
     the last commit (bounded by the commit path: they keep up with the commits, not the reactions).
  2. lag: commits on the primary open-loop (sent at scheduled times, not back-to-back) at
     R = min(--max-rate, 80% of that projection rate in memories/s) commits/s for --seconds; for every
     k-th commit (about --samples in all), as soon as its 201 arrives, GET
     /api/v1/memory/{id}/versions?after={position} on the replica (again after a 504 projection_lag)
     and the time from the 201 to the replica's 200: p50/p90/p99/max, the p50 of the first and last
     quarter of the commits (a rising lag: the machine is not keeping up), and where the lag is
     (sampled: the replica's slowest projection behind its log, its log behind the primary's). Then,
     for reference (`--light`, 0 for none), the same at 0.25 R for --seconds/2.
  3. catch-up after a partition, twice: both proxies cut, commits on the primary at R for
     --partition-s seconds, the primary's projections let catch up (its log quiet), the proxies
     healed; catch-up rate = the events written during the partition / the time from the heal until
     every projector of the replica's /health reached the primary's last position (also from the
     moment the replica's log moved again: its Redis reconnects within about a second).
     (a) cold: the replica never embedded those texts; (b) pre-warmed: before the cut their vectors
     are put into the replica's embedding cache (`<replica data dir>/cache/embeddings.sqlite`, keyed
     by model id and the sha256 of the memory content, which is what its memories projector embeds),
     as if shipped ahead; the rows the cache gained during each catch-up (the texts the replica
     embedded itself) are printed: the check of the pre-warm. Partial or full resync: the primary
     Redis's INFO stats sync_partial_ok / sync_full before the heal and after the catch-up (and the
     replica Redis's log lines about it). The ratio of each catch-up rate to the primary's
     projection rate is printed too.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import random
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from _harness import ROOT, percentile  # noqa: E402  (puts the repository on sys.path)

sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "e2e"))

import aiohttp  # noqa: E402
import redis as sync_redis  # noqa: E402

from tcp_proxy import TcpProxy  # noqa: E402
from up_process import base_env, free_port, output, request, start, stop, zhiyi_bin  # noqa: E402

REPLICA_ID = "rep-bench"
AGENTS = ["ann", "bob", "cat", "dan"]
EN_WORDS = """
    staging database backup invoice release window cache index deploy rollback kernel patch printer badge
    parking lunch budget roadmap vendor contract laptop monitor firewall certificate renewal migration schema
    cluster disk quota alert pager runbook sprint retro demo ticket garden kitchen bicycle harbor violin
    pepper lantern meadow copper saddle tunnel orchard marble ribbon canyon falcon pillow walnut glacier
    compass anchor blanket cactus dolphin engine feather goblet hammer island jacket kettle ladder magnet
    needle oyster parrot quartz rocket shovel tractor umbrella velvet wagon yogurt zipper basket candle
    desert eagle forest guitar helmet igloo jungle kayak lemon mirror nickel olive pencil quilt river
    salmon tiger unicorn valley whistle apron beacon cabin dagger elbow fabric gravel hazel ivory jigsaw
    lobster mango napkin otter pebble quiver radish spruce thimble vessel willow barley cobalt
    dynamo ember fjord granite hermit indigo jasmine kiosk lilac mosaic nectar opal prism raven sapphire
    tundra vortex wombat zephyr almond bramble cedar drizzle fennel ginger heron juniper kelp lotus
    """.split()
ZH_WORDS = """数据 备份 发票 会议 服务 磁盘 证书 迁移 预算 合同 打印 报销 周会 上线 回滚 告警 值班 日志 网络 权限
    端口 镜像 缓存 索引 集群 节点 配额 路由 密钥 账单 咖啡 花园 厨房 车库 港口 灯笼 草地 铜线 隧道 果园""".split()


class Broken(RuntimeError):
    """Something that must work did not: the run exits 1."""


def pos(p: str | None) -> tuple[int, int]:
    """A stream position as a comparable pair (none yet: before everything)."""
    if not p:
        return (-1, -1)
    ms, _, seq = p.partition("-")
    return (int(ms), int(seq or 0))


def fact(i: int, rng: random.Random) -> str:
    """Distinct content number `i`: random words, one in five Chinese; no word common to all of them
    (the passive validator would find every commit restating its ten nearest memories)."""
    if i % 5 == 4:
        zh = rng.sample(ZH_WORDS, 4)
        return f"#{i}：{zh[0]}{zh[1]}，{zh[2]}{zh[3]}（{rng.choice(EN_WORDS)}）"
    return f"#{i}: {' '.join(rng.sample(EN_WORDS, 6))}"


class Contents:
    def __init__(self) -> None:
        self.rng = random.Random(17)
        self.i = 0

    def take(self, n: int) -> list[str]:
        out = [fact(self.i + j, self.rng) for j in range(n)]
        self.i += n
        return out


class Lan:
    """The primary and the replica as processes, the replica's links through two proxies."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.a, self.b = root / "primary", root / "replica"
        self.port_a, self.port_b = free_port(), free_port()
        self.procs: list = []
        self.proxies: list[TcpProxy] = []

    def start(self) -> "Lan":
        common = dict(ZHIYI_QUERY_EMBEDDING_PROCESS="0", ZHIYI_TICK_INTERVAL_S="0", ZHIYI_LOG_LEVEL="warning")
        self.primary = start([str(zhiyi_bin()), "up", "--data-dir", str(self.a), "--port", str(self.port_a),
                              "--redis-bind", "127.0.0.1"], self.port_a, self.root, base_env(**common))
        self.procs.append(self.primary)
        self.admin = (self.a / "api_key").read_text().strip()
        self.primary_redis_url = (self.a / "redis_url").read_text().strip()
        self.primary_redis = sync_redis.Redis.from_url(self.primary_redis_url)
        self.primary_redis.config_set("repl-diskless-sync-delay", 0)   # a quick first sync
        redis_port = int(self.primary_redis_url.rsplit(":", 1)[1].split("/")[0])
        self.redis_proxy = TcpProxy("127.0.0.1", redis_port).start()
        self.proxies.append(self.redis_proxy)
        self.http_proxy = TcpProxy("127.0.0.1", self.port_a).start()
        self.proxies.append(self.http_proxy)
        status, issued = request(self.port_a, "POST", "/api/v1/admin/replicas", self.admin,
                                 {"instance_id": REPLICA_ID})
        if status != 201:
            raise Broken(f"POST /api/v1/admin/replicas: {status} {issued}")
        password = (self.a / "redis_replica_password").read_text().strip()
        self.replica = start(
            [str(zhiyi_bin()), "replica", "--primary", f"http://{self.http_proxy.url_host_port}",
             "--primary-redis", f"redis://zhiyi-replica:{password}@{self.redis_proxy.url_host_port}",
             "--data-dir", str(self.b), "--port", str(self.port_b)], self.port_b, self.root,
            base_env(**common, ZHIYI_REPLICA_KEY=issued["replica_key"], ZHIYI_INSTANCE_ID=REPLICA_ID,
                     API_KEY=self.admin))
        self.procs.append(self.replica)
        self.replica_redis = sync_redis.Redis.from_url((self.b / "redis_url").read_text().strip())
        self.state_redis_port = int((self.b / "state_redis_url").read_text().strip().rsplit(":", 1)[1].split("/")[0])
        return self

    @property
    def cache_path(self) -> Path:
        """The replica's embedding cache (Settings.embedding_cache_path of its data dir)."""
        return self.b / "cache" / "embeddings.sqlite"

    def cache_rows(self) -> int:
        with sqlite3.connect(f"file:{self.cache_path}?mode=ro", uri=True, timeout=30) as conn:
            return int(conn.execute("SELECT count(*) FROM embeddings").fetchone()[0])

    def resyncs(self) -> dict[str, int]:
        stats = self.primary_redis.info("stats")
        return {k: int(stats.get(k, 0)) for k in ("sync_full", "sync_partial_ok", "sync_partial_err")}

    def repl_offset(self) -> int:
        return int(self.primary_redis.info("replication")["master_repl_offset"])

    def backlog_bytes(self) -> int:
        return int(self.primary_redis.config_get("repl-backlog-size")["repl-backlog-size"])

    def replica_log_size(self) -> int:
        path = self.b / "redis" / "server.log"
        return path.stat().st_size if path.exists() else 0

    def replica_log_since(self, offset: int) -> list[str]:
        path = self.b / "redis" / "server.log"
        with path.open("rb") as f:
            f.seek(offset)
            lines = f.read().decode(errors="replace").splitlines()
        keep = ("resync", "Resync", "synchroniz", "MASTER <-> REPLICA sync", "PSYNC")
        return [line.split(" * ", 1)[-1].strip() for line in lines if any(k in line for k in keep)]

    def stop(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                try:
                    stop(proc)
                except Exception:  # noqa: BLE001 - still stop the others
                    proc.kill()
                    proc.wait()
        for proxy in self.proxies:
            proxy.stop()


class CpuMeter:
    """CPU seconds each process of the benchmark spent over a window (Linux /proc), the rest of the
    machine's busy time (`others`: the machine is shared) and its idle time."""

    def __init__(self, lan: "Lan") -> None:
        self.lan = lan
        self.hz = os.sysconf("SC_CLK_TCK")
        self.start = self._sample()

    def _label(self, pid: int, ppid_of: dict[int, int], cmd: dict[int, str]) -> str | None:
        roots = {self.lan.primary.pid: "primary", self.lan.replica.pid: "replica"}
        if pid == os.getpid():
            return "bench (proxies, client)"
        if pid in roots:
            return f"{roots[pid]} gateway"
        chain, p = [], pid
        while p in ppid_of and p not in roots and len(chain) < 8:
            chain.append(p)
            p = ppid_of[p]
        if p not in roots:
            return None
        side = roots[p]
        if "redis-server" in cmd[pid] or "valkey" in cmd[pid]:
            if side == "replica":
                return "replica state Redis" if str(self.lan.state_redis_port) in cmd[pid] else "replica log Redis"
            return "primary Redis"
        return f"{side} {'projector child' if 'project' in cmd[pid] else 'children'}"

    def _sample(self) -> tuple[float, dict[str, float], float, float]:
        ppid_of: dict[int, int] = {}
        ticks: dict[int, int] = {}
        cmd: dict[int, str] = {}
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                stat = Path(f"/proc/{name}/stat").read_text()
                argv = Path(f"/proc/{name}/cmdline").read_bytes()
                cmd[int(name)] = argv.replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            fields = stat[stat.rindex(")") + 2:].split()
            ppid_of[int(name)] = int(fields[1])
            ticks[int(name)] = int(fields[11]) + int(fields[12])
        out: dict[str, float] = {}
        for pid, t in ticks.items():
            label = self._label(pid, ppid_of, cmd)
            if label is not None:
                out[label] = out.get(label, 0.0) + t / self.hz
        cpu = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
        idle = (cpu[3] + cpu[4]) / self.hz
        busy = (sum(cpu[:8]) - cpu[3] - cpu[4]) / self.hz
        return time.perf_counter(), out, busy, idle

    def report(self) -> str:
        t0, start, busy0, idle0 = self.start
        t1, end, busy1, idle1 = self._sample()
        spent = {k: v - start.get(k, 0.0) for k, v in end.items()}
        ours = sum(spent.values())
        parts = [f"{k} {v:.1f}" for k, v in sorted(spent.items(), key=lambda kv: -kv[1]) if v >= 0.05]
        return (f"CPU s over {t1 - t0:.1f} s x {os.cpu_count()} cores: {', '.join(parts)}; "
                f"others {max(0.0, busy1 - busy0 - ours):.1f}, idle {idle1 - idle0:.1f}")


class Client:
    def __init__(self, lan: Lan) -> None:
        self.lan = lan
        timeout = aiohttp.ClientTimeout(total=60)
        self.primary = aiohttp.ClientSession(f"http://127.0.0.1:{lan.port_a}", timeout=timeout,
                                             connector=aiohttp.TCPConnector(limit=256))
        self.replica = aiohttp.ClientSession(f"http://127.0.0.1:{lan.port_b}", timeout=timeout,
                                             connector=aiohttp.TCPConnector(limit=512))
        self.keys: list[str] = []

    async def close(self) -> None:
        await self.primary.close()
        await self.replica.close()

    async def register(self) -> None:
        for agent in AGENTS:
            async with self.primary.post("/api/v1/agents/register", json={"agent_id": agent},
                                         headers={"X-API-Key": self.lan.admin}) as resp:
                if resp.status != 201:
                    raise Broken(f"register {agent}: {resp.status} {await resp.text()}")
                self.keys.append((await resp.json())["api_key"])

    async def commit(self, i: int, content: str) -> tuple[float, str, str]:
        """(time of the 201, memory id, position)."""
        async with self.primary.post("/api/v1/commit", json={"content": content},
                                     headers={"X-API-Key": self.keys[i % len(self.keys)]}) as resp:
            body = await resp.json(content_type=None)
            if resp.status != 201:
                raise Broken(f"commit {i}: {resp.status} {body}")
        return time.perf_counter(), body["memory_id"], body["position"]

    async def health(self, session: aiohttp.ClientSession) -> dict:
        async with session.get("/health") as resp:
            body = await resp.json(content_type=None)
        return body if resp.status == 200 else body.get("error", {}).get("details", body)

    async def wait_projected(self, session: aiohttp.ClientSession, target: str, timeout_s: float,
                             interval_s: float, what: str, marks: dict[str, float] | None = None) -> float:
        """Poll /health until every projector is at `target` or beyond; the time it happened. With
        `marks` ({"from": position}): the times the log (the replica's Redis) first moved past `from`
        ("resumed") and got to `target` ("log") are put in it."""
        deadline = time.perf_counter() + timeout_s
        want = pos(target)
        while True:
            h = await self.health(session)
            now = time.perf_counter()
            if marks is not None:
                log = pos(h.get("log", {}).get("last_position"))
                if "resumed" not in marks and log > pos(marks["from"]):
                    marks["resumed"] = now
                if "log" not in marks and log >= want:
                    marks["log"] = now
            projectors = h.get("projectors") or {}
            if projectors and all(pos(p.get("position")) >= want for p in projectors.values()):
                return now
            if now > deadline:
                behind = {n: p.get("position") for n, p in projectors.items() if pos(p.get("position")) < want}
                raise Broken(f"{what}: not at {target} after {timeout_s:.0f} s; behind: {behind}; "
                             f"link {h.get('link')}")
            await asyncio.sleep(interval_s)

    async def wait_quiet(self, timeout_s: float, interval_s: float, what: str,
                         quiet_s: float = 1.5) -> tuple[float, str]:
        """Poll the primary's /health until every projector is at the log's last position and the log
        has not grown for `quiet_s` (the reactions, e.g. the passive validator, append after a commit's
        201): (the time the projectors reached that position, the position)."""
        deadline = time.perf_counter() + timeout_s
        seen: str | None = None
        reached = 0.0
        while True:
            h = await self.health(self.primary)
            now = time.perf_counter()
            last = h.get("log", {}).get("last_position")
            projectors = h.get("projectors") or {}
            if last and projectors and all(pos(p.get("position")) >= pos(last) for p in projectors.values()):
                if last != seen:
                    seen, reached = last, now
                elif now - reached >= quiet_s:
                    return reached, last
            else:
                seen = None
            if now > deadline:
                raise Broken(f"{what}: the primary's projections not at its last position {last} after "
                             f"{timeout_s:.0f} s: {({n: p.get('position') for n, p in projectors.items()})}")
            await asyncio.sleep(interval_s)


async def open_loop(rate: float, count: int, fire) -> float:
    """Call `fire(i)` (a coroutine) at t0 + i/rate, not waiting for earlier calls; returns t0 once all
    are done. The first failure is raised."""
    pending: set[asyncio.Task] = set()
    failures: list[BaseException] = []

    def done(task: asyncio.Task) -> None:
        pending.discard(task)
        if not task.cancelled() and task.exception() is not None:
            failures.append(task.exception())

    t0 = time.perf_counter() + 0.05
    for i in range(count):
        delay = t0 + i / rate - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        if failures:
            break
        task = asyncio.create_task(fire(i))
        pending.add(task)
        task.add_done_callback(done)
    while pending:
        await asyncio.wait(set(pending))
    if failures:
        raise failures[0]
    return t0


async def projection_rate(client: Client, contents: Contents, n: int, concurrency: int) -> dict:
    texts = contents.take(n)
    xlen0 = client.lan.primary_redis.xlen("zhiyi:events")
    times: list[float] = []
    queue = iter(range(n))
    started = time.perf_counter()

    positions: list[str] = []

    async def worker() -> None:
        for i in queue:
            t, _, position = await client.commit(i, texts[i])
            times.append(t)
            positions.append(position)

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    last_commit = max(positions, key=pos)
    commits_folded = await client.wait_projected(client.primary, last_commit, 120, 0.02, "the burst's commits")
    done, _ = await client.wait_quiet(120, 0.02, "the burst")
    events = client.lan.primary_redis.xlen("zhiyi:events") - xlen0
    first, last = min(times), max(times)
    return {"commit_rate": n / (last - started), "events": events, "projection_rate": events / (done - first),
            "memories_rate": n / (done - first), "projected_s": done - first, "after_last_201": done - last,
            "commits_rate": n / (commits_folded - first), "commits_s": commits_folded - first}


async def lag(client: Client, contents: Contents, rate: float, seconds: float, samples: int) -> dict:
    n = max(1, int(rate * seconds))
    every = max(1, math.ceil(n / samples))
    texts = contents.take(n)
    sem = asyncio.Semaphore(128)       # commits in flight at most (an overloaded primary shows as a lower rate)
    lags: list[float] = []
    order: list[int] = []             # the commit each lag belongs to (by send time)
    commit_ms: list[float] = []
    retries = 0
    in_flight = peak = 0
    last_201 = 0.0

    async def one(i: int) -> None:
        nonlocal retries, in_flight, peak, last_201
        async with sem:
            t = time.perf_counter()
            t201, memory_id, position = await client.commit(i, texts[i])
        commit_ms.append((t201 - t) * 1000)
        last_201 = max(last_201, t201)
        if i % every:
            return
        in_flight += 1
        peak = max(peak, in_flight)
        try:
            while True:
                async with client.replica.get(f"/api/v1/memory/{memory_id}/versions", params={"after": position},
                                              headers={"X-API-Key": client.keys[i % len(client.keys)]}) as resp:
                    await resp.read()
                    if resp.status == 200:
                        lags.append((time.perf_counter() - t201) * 1000)
                        order.append(i)
                        return
                    if resp.status != 504:
                        raise Broken(f"replica read of {memory_id} after {position}: {resp.status} {await resp.text()}")
                retries += 1
                if time.perf_counter() - t201 > 120:
                    raise Broken(f"replica read of {memory_id} after {position}: no 200 within 120 s of the 201")
        finally:
            in_flight -= 1

    projection_behind: list[int] = []
    replication_behind: list[int] = []
    stop = asyncio.Event()

    async def sample() -> None:
        """Where the lag is: the replica's slowest projection behind its log, its log behind the primary's."""
        lan = client.lan
        while not stop.is_set():
            h = await client.health(client.replica)
            projection_behind.append(int(h.get("lag_events") or 0))
            a, b = await asyncio.to_thread(lambda: (lan.primary_redis.xlen("zhiyi:events"),
                                                    lan.replica_redis.xlen("zhiyi:events")))
            replication_behind.append(max(0, a - b))
            try:
                await asyncio.wait_for(stop.wait(), 0.5)
            except asyncio.TimeoutError:
                pass

    meter = CpuMeter(client.lan)
    sampler = asyncio.create_task(sample())
    try:
        t0 = await open_loop(rate, n, one)
    finally:
        stop.set()
        await sampler
    quarter = max(1, len(order) // 4)
    first = [lags[k] for k in sorted(range(len(order)), key=lambda k: order[k])[:quarter]]
    last = [lags[k] for k in sorted(range(len(order)), key=lambda k: order[k])[-quarter:]]
    return {"first_p50": percentile(first, 50), "last_p50": percentile(last, 50),
            "projection_behind": projection_behind, "replication_behind": replication_behind,
            "cpu": meter.report(), "n": n, "every": every, "lags": lags, "rate": n / (last_201 - t0),
            "retries": retries, "peak_reads": peak, "commit_p50": percentile(commit_ms, 50),
            "commit_p99": percentile(commit_ms, 99)}


async def partition(client: Client, texts: list[str], rate: float, seconds: float, timeout_s: float) -> dict:
    lan = client.lan
    _, target = await client.wait_quiet(120, 0.1, "before the cut")
    await client.wait_projected(client.replica, target, 120, 0.1, "the replica before the cut")
    cache0 = lan.cache_rows()
    xlen0 = lan.primary_redis.xlen("zhiyi:events")
    offset0 = lan.repl_offset()
    lan.redis_proxy.cut()
    lan.http_proxy.cut()
    sent_from = time.perf_counter()
    meter = CpuMeter(lan)

    async def one(i: int) -> None:
        await client.commit(i, texts[i])

    t0 = await open_loop(rate, len(texts), one)
    sent_rate = len(texts) / (time.perf_counter() - t0)
    # the primary's projections (and reactions) first, so the replica catches up on an otherwise quiet machine
    _, target = await client.wait_quiet(timeout_s, 0.1, "the partition")
    events = lan.primary_redis.xlen("zhiyi:events") - xlen0
    link = lan.replica_redis.info("replication").get("master_link_status")
    before = lan.resyncs()
    stream_bytes = lan.repl_offset() - offset0
    log_offset = lan.replica_log_size()
    cut_s = time.perf_counter() - sent_from
    cut_cpu = meter.report()
    marks = {"from": (await client.health(client.replica))["log"]["last_position"]}
    meter = CpuMeter(lan)
    lan.redis_proxy.heal()
    lan.http_proxy.heal()
    healed = time.perf_counter()
    done = await client.wait_projected(client.replica, target, timeout_s, 0.1, "the replica's catch-up", marks)
    catchup_cpu = meter.report()
    after = lan.resyncs()
    full = after["sync_full"] - before["sync_full"]
    partial = after["sync_partial_ok"] - before["sync_partial_ok"]
    kind = "full" if full else "partial" if partial else "none seen"
    return {"cut_cpu": cut_cpu, "catchup_cpu": catchup_cpu, "events": events, "commits": len(texts),
            "sent_rate": sent_rate, "cut_s": cut_s, "link_during_cut": link, "catchup_s": done - healed,
            "log_s": marks.get("log", math.nan) - healed, "resumed_s": marks.get("resumed", math.nan) - healed,
            "rate": events / (done - healed), "rate_resumed": events / (done - marks.get("resumed", healed)),
            "stream_mb": stream_bytes / 2 ** 20, "backlog_mb": lan.backlog_bytes() / 2 ** 20,
            "kind": kind, "full": full, "partial": partial, "embedded": lan.cache_rows() - cache0,
            "redis_log": lan.replica_log_since(log_offset)}


def prewarm(cache_path: Path, texts: list[str]) -> tuple[float, int]:
    """Embed `texts` with the replica's model into its cache file, as if shipped ahead: (seconds, rows)."""
    from projections.models.embedding import make_embedder

    embedder = make_embedder(bge_endpoint=None, bge_api_key=None, bge_model=None, cache_path=str(cache_path),
                             threads=1)
    try:
        started = time.perf_counter()
        for i in range(0, len(texts), 256):
            embedder.embed(texts[i:i + 256])
        return time.perf_counter() - started, embedder.misses
    finally:
        embedder.close()


def print_partition(label: str, p: dict) -> None:
    print(f"  {label}: {p['events']} events ({p['commits']} commits sent at {p['sent_rate']:.0f}/s) over "
          f"{p['cut_s']:.1f} s cut (replica link during the cut: {p['link_during_cut']}); healed: the replica's "
          f"log moving again after {p['resumed_s']:.2f} s (its Redis reconnects), all there after {p['log_s']:.2f} s, "
          f"its projections after {p['catchup_s']:.2f} s = {p['rate']:.0f} events/s "
          f"({p['rate_resumed']:.0f} events/s from the log moving again); "
          f"{p['kind']} resync (sync_full +{p['full']}, sync_partial_ok +{p['partial']}; the replication stream "
          f"grew {p['stream_mb']:.1f} MB during the cut, backlog {p['backlog_mb']:.0f} MB); "
          f"texts the replica embedded itself during the catch-up: {p['embedded']}", flush=True)
    for line in p["redis_log"][:4]:
        print(f"      replica Redis: {line}", flush=True)
    print(f"      during the cut: {p['cut_cpu']}", flush=True)
    print(f"      during the catch-up: {p['catchup_cpu']}", flush=True)


async def run(lan: Lan, args: argparse.Namespace) -> None:
    client = Client(lan)
    contents = Contents()
    try:
        await client.register()
        # warm-up: both sides' models loaded and projectors running before anything is timed
        for i, text in enumerate(contents.take(20)):
            await client.commit(i, text)
        _, target = await client.wait_quiet(120, 0.1, "the warm-up")
        await client.wait_projected(client.replica, target, 120, 0.1, "the replica's warm-up")

        burst = await projection_rate(client, contents, args.burst, args.concurrency)
        print(f"burst of {args.burst} commits at c={args.concurrency}: commit path {burst['commit_rate']:.0f} "
              f"commits/s; the primary's projections at the last commit {burst['commits_s']:.2f} s after the first "
              f"201 ({burst['commits_rate']:.0f} memories/s), and with every event the commits caused "
              f"({burst['events']} events, {burst['events'] / args.burst:.2f} per commit: the reactions' too) "
              f"{burst['projected_s']:.2f} s after it = {burst['memories_rate']:.0f} memories/s, "
              f"{burst['projection_rate']:.0f} events/s ({burst['after_last_201']:.2f} s after the last 201)",
              flush=True)
        rate = args.rate or min(args.max_rate, 0.8 * burst["memories_rate"])
        print(f"rate used: {rate:.0f} commits/s = min({args.max_rate:.0f}, 0.8 x {burst['memories_rate']:.0f})"
              if not args.rate else f"rate used: {rate:.0f} commits/s (--rate)", flush=True)

        lagged = await lag(client, contents, rate, args.seconds, args.samples)
        ms = lagged["lags"]
        print(f"lag: {len(ms)} replica reads (every {lagged['every']}th of {lagged['n']} commits, sent at "
              f"{lagged['rate']:.0f}/s): p50 {percentile(ms, 50):.0f} ms, p90 {percentile(ms, 90):.0f} ms, "
              f"p99 {percentile(ms, 99):.0f} ms, max {max(ms):.0f} ms; 504 retries {lagged['retries']}, "
              f"reads in flight at most {lagged['peak_reads']}; primary commit p50 {lagged['commit_p50']:.1f} ms "
              f"p99 {lagged['commit_p99']:.1f} ms", flush=True)
        pb, rb = lagged["projection_behind"], lagged["replication_behind"]
        print(f"      lag p50 of the first quarter of the commits {lagged['first_p50']:.0f} ms, of the last "
              f"{lagged['last_p50']:.0f} ms; sampled every 0.5 s: the replica's slowest projection behind its "
              f"log by {sum(pb) / max(1, len(pb)):.0f} events on average (max {max(pb, default=0)}), its log behind "
              f"the primary's by {sum(rb) / max(1, len(rb)):.1f} (max {max(rb, default=0)})", flush=True)
        print(f"      {lagged['cpu']}", flush=True)

        light = None
        if args.light > 0:   # for reference: the same at a rate that leaves the machine idle part of the time
            _, target = await client.wait_quiet(300, 0.1, "before the light window")
            await client.wait_projected(client.replica, target, 300, 0.1, "the replica before the light window")
            light = await lag(client, contents, rate * args.light, args.seconds / 2, args.samples)
            lm = light["lags"]
            print(f"lag at {args.light:g} x R = {rate * args.light:.1f} commits/s for {args.seconds / 2:.0f} s: "
                  f"{len(lm)} reads, p50 {percentile(lm, 50):.0f} ms, p90 {percentile(lm, 90):.0f} ms, "
                  f"p99 {percentile(lm, 99):.0f} ms, max {max(lm):.0f} ms; 504 retries {light['retries']}", flush=True)
            print(f"      {light['cpu']}", flush=True)

        count = max(1, int(rate * args.partition_s))
        timeout_s = args.catchup_timeout or 120 + 5 * args.partition_s
        print(f"partitions: {args.partition_s:.0f} s each at {rate:.0f}/s ({count} commits)", flush=True)
        cold = await partition(client, contents.take(count), rate, args.partition_s, timeout_s)
        print_partition("cold", cold)

        texts = contents.take(count)
        warm_s, warmed = await asyncio.to_thread(prewarm, lan.cache_path, texts)
        print(f"  pre-warm: {warmed} vectors embedded in this process into {lan.cache_path.name} in "
              f"{warm_s:.1f} s ({warmed / warm_s:.0f}/s)", flush=True)
        warm = await partition(client, texts, rate, args.partition_s, timeout_s)
        print_partition("pre-warmed", warm)
    finally:
        await client.close()

    pr = burst["projection_rate"]
    rows = [
        ("primary commit path (burst, c=%d)" % args.concurrency, f"{burst['commit_rate']:.0f} commits/s"),
        ("primary projections at the last commit",
         f"{burst['commits_rate']:.0f} memories/s (bounded by the commit path)"),
        ("primary projection rate (burst)", f"{pr:.0f} events/s = {burst['memories_rate']:.0f} memories/s "
                                            f"({burst['events'] / args.burst:.2f} events per commit)"),
        ("rate used (lag, partitions)", f"{rate:.0f} commits/s (achieved {lagged['rate']:.0f}/s in the lag window)"),
        ("lag 201 -> replica 200, p50", f"{percentile(ms, 50):.0f} ms"),
        ("lag p90", f"{percentile(ms, 90):.0f} ms"),
        ("lag p99", f"{percentile(ms, 99):.0f} ms"),
        ("lag max", f"{max(ms):.0f} ms  ({len(ms)} samples)"),
        ("lag p50, first / last quarter", f"{lagged['first_p50']:.0f} / {lagged['last_p50']:.0f} ms"),
        *([(f"lag at {args.light:g} x R = {rate * args.light:.1f}/s, p50/p99",
            f"{percentile(light['lags'], 50):.0f} / {percentile(light['lags'], 99):.0f} ms "
            f"({len(light['lags'])} samples, reference)")] if light else []),
        (f"partition length", f"{args.partition_s:.0f} s (the issue's: 600 s, --partition-s 600)"),
        ("catch-up, cache cold", f"{cold['rate']:.0f} events/s ({cold['events']} events in "
                                 f"{cold['catchup_s']:.1f} s), {cold['kind']} resync"),
        ("catch-up, cache pre-warmed", f"{warm['rate']:.0f} events/s ({warm['events']} events in "
                                       f"{warm['catchup_s']:.1f} s), {warm['kind']} resync"),
        ("  the same from the log moving again", f"cold {cold['rate_resumed']:.0f} events/s, pre-warmed "
                                                 f"{warm['rate_resumed']:.0f} events/s (after {cold['resumed_s']:.1f} "
                                                 f"and {warm['resumed_s']:.1f} s reconnecting)"),
        ("catch-up / primary projection rate", f"cold {cold['rate'] / pr:.2f}, pre-warmed {warm['rate'] / pr:.2f}"),
        ("texts embedded by the replica in catch-up", f"cold {cold['embedded']}, pre-warmed {warm['embedded']}"),
    ]
    width = max(len(r[0]) for r in rows)
    print()
    print(f"{'figure':<{width}}  value")
    print(f"{'-' * width}  {'-' * 40}")
    for name, value in rows:
        print(f"{name:<{width}}  {value}")
    print()
    print(f"processes ({os.cpu_count()} cores, shared machine): primary `zhiyi up` gateway + its `zhiyi project` "
          "child + the primary Redis; replica `zhiyi replica` gateway with in-process projectors + its replicated "
          "Redis + its state Redis; 2 TCP proxies and the load generator in this process")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--burst", type=int, default=300, help="commits of the projection-rate burst")
    p.add_argument("--concurrency", type=int, default=8, help="commits in flight during the burst")
    p.add_argument("--seconds", type=float, default=20.0, help="length of the lag window")
    p.add_argument("--samples", type=int, default=500, help="replica reads in the lag window, about")
    p.add_argument("--max-rate", type=float, default=500.0, help="the cap of the commit rate R")
    p.add_argument("--rate", type=float, default=None, help="R itself instead of min(cap, 0.8 x projection rate)")
    p.add_argument("--light", type=float, default=0.25,
                   help="then a reference lag window at this fraction of R for --seconds/2 (0: none)")
    p.add_argument("--partition-s", type=float, default=60.0, help="length of each partition (the issue's: 600)")
    p.add_argument("--catchup-timeout", type=float, default=None,
                   help="seconds a catch-up may take before the run is called broken (120 + 5 x partition)")
    args = p.parse_args()
    import logging

    import structlog

    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    root = Path(tempfile.mkdtemp(prefix="zhiyi-bench-replica-"))
    lan = Lan(root)
    failed = True
    try:
        print(f"starting the primary and the replica in {root} (rate limits off: ZHIYI_RATE_LIMITS=off) ...", flush=True)
        lan.start()
        asyncio.run(run(lan, args))
        failed = False
    except Broken as exc:
        print(f"BROKEN: {exc}", file=sys.stderr)
    finally:
        if failed:
            for name in ("primary", "replica"):
                proc = getattr(lan, name, None)
                if proc is not None:
                    print(f"--- {name} output (tail) ---\n{output(proc)[-3000:]}", file=sys.stderr)
        lan.stop()
        shutil.rmtree(root, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
