"""`zhiyi up`'s supervisor of the projector child (gateway/process/projector_process.py): after an exit, its
restart back-off (up to 30 s for a crash loop) ends as soon as a Redis that was away answers again,
so an outage never keeps the projectors away for long after Redis returns."""

from __future__ import annotations

import threading
import time

from gateway.process.projector_process import ProjectorProcess
from redis_process import RestartableRedis


def _back_off_in_thread(sup: ProjectorProcess, seconds: float) -> tuple[threading.Thread, dict]:
    result: dict = {}

    def run() -> None:
        result["stopping"] = sup._back_off(seconds)
        result["ended"] = time.monotonic()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, result


def test_the_restart_back_off_ends_when_redis_returns(tmp_path):
    server = RestartableRedis(tmp_path / "redis")      # not started yet: Redis is away
    sup = ProjectorProcess(tmp_path / "data", server.url)
    thread, result = _back_off_in_thread(sup, 30.0)
    time.sleep(1.2)
    assert thread.is_alive()
    server.start()
    back = time.monotonic()
    try:
        thread.join(10)
        assert result["stopping"] is False
        assert result["ended"] - back < 2.0           # checked every half second
    finally:
        server.stop()


def test_the_back_off_is_kept_while_redis_is_up_and_stop_interrupts_it(tmp_path):
    server = RestartableRedis(tmp_path / "redis").start()
    try:
        sup = ProjectorProcess(tmp_path / "data", server.url)
        started = time.monotonic()
        assert sup._back_off(1.0) is False
        assert time.monotonic() - started >= 0.95      # a crash with Redis up: the full back-off
        thread, result = _back_off_in_thread(sup, 30.0)
        time.sleep(0.3)
        sup._stopping.set()
        thread.join(5)
        assert result["stopping"] is True
    finally:
        server.stop()
