"""`zhiyi up`'s projectors in a child process (`zhiyi project`), supervised from the gateway's.

Why a process of their own: the gateway's event loop serves every recall and is the part that
runs out first under concurrent load. In the same process, the projectors' folding (the
`recall.served` statistics of the activity and graph projections, the embedding of new commits)
holds the same GIL, and each time the loop waits on a syscall or a numpy kernel it can lose the
GIL to them for a switch interval. Apart, they run on another core. Read-your-writes is unchanged:
waiters read the checkpoints the runners publish in Redis (`projections.core.waiter`).

The child is a fresh interpreter started without running anything between fork and exec (no
`preexec_fn`: forking the threaded gateway and running Python in the copy made lancedb warn
"fork support is experimental"); it inherits the environment and stdout/stderr, runs in its own
session (a terminal's Ctrl-C goes to the gateway, which then stops it) and, on Linux, asks for
SIGTERM when the gateway dies without stopping it (`die_with_parent`, called by the child itself
with the gateway's pid: no orphaned second writer for the next `zhiyi up`). `start()` returns once
the child has its projectors running and its model loaded (`zhiyi project
--ready-file`), so `zhiyi up` serves only then. If the child exits while the gateway runs, it is started
again after a back-off (1 s, doubling to 30 s; reset after a minute of running) and the exit is
logged; when Redis was unreachable during the back-off, the child is started as soon as Redis
answers again (checked every half second), so an outage never keeps the projectors away for
longer than that. `stop()` sends SIGTERM and waits for a clean shutdown (checkpoints written) before
killing it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import structlog

from gateway.process.settings import child_environment

log = structlog.get_logger(__name__)

BACKOFF_START_S = 1.0
BACKOFF_MAX_S = 30.0
REDIS_CHECK_S = 0.5       # while backing off: is Redis back? (then restart at once)
HEALTHY_AFTER_S = 60.0
STOP_TIMEOUT_S = 30.0
READY_TIMEOUT_S = 120.0
READY_FILE = ".projectors-ready"


class ProjectorProcess:
    def __init__(self, data_dir: Path, redis_url: str, *, cwd: Path | None = None) -> None:
        self._ready = Path(data_dir) / READY_FILE
        self.redis_url = redis_url
        # the URL goes through the environment: with `--redis-bind` it holds a password (no `ps` shows it)
        self.argv = [sys.executable, "-m", "gateway.cli.main", "project", "--data-dir", str(data_dir),
                     "--ready-file", str(self._ready), "--parent-pid", str(os.getpid())]
        self.cwd = cwd
        self.restarts = 0
        self._proc: subprocess.Popen | None = None
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._watcher: threading.Thread | None = None

    @property
    def pid(self) -> int | None:
        proc = self._proc
        return proc.pid if proc is not None else None

    def start(self, wait_ready_s: float = READY_TIMEOUT_S) -> bool:
        """Start the child and wait (up to `wait_ready_s`) until it reports its projectors running
        and its model loaded; False (logged) when it did not in time: the gateway serves anyway."""
        self._spawn()
        self._watcher = threading.Thread(target=self._watch, name="projector-process", daemon=True)
        self._watcher.start()
        deadline = time.monotonic() + wait_ready_s
        while time.monotonic() < deadline:
            if self._ready.exists():
                return True
            time.sleep(0.05)
        log.warning("projector_process.not_ready", waited_s=wait_ready_s)
        return False

    def _spawn(self) -> None:
        with self._lock:
            if self._stopping.is_set():
                return
            self._ready.unlink(missing_ok=True)
            # its own session: a terminal's Ctrl-C reaches the gateway, which stops the child in order
            self._proc = subprocess.Popen(self.argv, cwd=self.cwd, start_new_session=True,
                                          env=child_environment(REDIS_URL=self.redis_url))
            log.info("projector_process.started", pid=self._proc.pid)

    def _watch(self) -> None:
        backoff = BACKOFF_START_S
        while not self._stopping.is_set():
            proc = self._proc
            started = time.monotonic()
            rc = proc.wait() if proc is not None else None
            if self._stopping.is_set():
                return
            if time.monotonic() - started > HEALTHY_AFTER_S:
                backoff = BACKOFF_START_S
            log.error("projector_process.exited", rc=rc, restart_in_s=backoff)
            if self._back_off(backoff):
                return
            backoff = min(backoff * 2, BACKOFF_MAX_S)
            self.restarts += 1
            self._spawn()

    def _back_off(self, seconds: float) -> bool:
        """Wait `seconds` before a restart, or less when Redis comes back from an outage meanwhile;
        True when stopping."""
        from gateway.process.embedded_redis import reachable

        deadline = time.monotonic() + seconds
        redis_was_down = False
        while (left := deadline - time.monotonic()) > 0:
            if self._stopping.wait(min(REDIS_CHECK_S, left)):
                return True
            up = reachable(self.redis_url, REDIS_CHECK_S)
            if up and redis_was_down:
                log.info("projector_process.redis_back", restart_now=True)
                return False
            redis_was_down = redis_was_down or not up
        return self._stopping.is_set()

    def stop(self) -> None:
        """SIGTERM, wait for the projectors' clean stop, kill after STOP_TIMEOUT_S."""
        with self._lock:
            self._stopping.set()
            proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                log.error("projector_process.killed", pid=proc.pid)
                proc.kill()
                proc.wait()
        if self._watcher is not None:
            self._watcher.join(timeout=5)


def die_with_parent(parent_pid: int) -> None:
    """In the child (`zhiyi project --parent-pid`): SIGTERM when the thread that started it exits
    (Linux only); exit at once if that parent is already gone (it died before this call)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent_pid:
        log.error("projector_process.orphaned", parent_pid=parent_pid)
        raise SystemExit(0)
