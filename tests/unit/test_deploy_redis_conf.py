"""The shipped Redis configurations agree with what zhiyi starts itself (gateway.process.embedded_redis):
the replication backlog, the replication-only user, a replica's replicaof."""

from __future__ import annotations

from pathlib import Path

from gateway.process.embedded_redis import REPLICA_USER, REPLICATION_BACKLOG

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"


def _settings(name: str) -> dict[str, str]:
    lines = [line.split(None, 1) for line in (DEPLOY / name).read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    return {key: value for key, value in lines}


def test_the_primary_conf_serves_replicas_safely() -> None:
    conf = _settings("redis-primary.conf")
    assert conf["repl-backlog-size"] == REPLICATION_BACKLOG == "256mb"
    assert conf["user"] == f"{REPLICA_USER} on >REPLICA_PASSWORD +psync +replconf +ping"
    assert "requirepass" in conf and conf["appendonly"] == "yes"


def test_the_replica_conf_replicates_read_only() -> None:
    conf = _settings("redis-replica.conf")
    assert conf["replicaof"] == "10.0.0.5 6380" and conf["masteruser"] == REPLICA_USER
    assert conf["replica-read-only"] == "yes" and conf["bind"] == "127.0.0.1"
