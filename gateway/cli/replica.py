"""`zhiyi replica`: a read replica on another machine of the LAN (seed 4.1).

The log reaches it through Redis replication only: an embedded Redis/Valkey it starts `replicaof`
the primary's (`--primary-redis`), or `--redis-url` naming a Redis whose ROLE shows it replicates
`--primary-redis`. Its own state — checkpoints, read generations, the recall cache, its heartbeat —
lives in a second embedded Redis of its data dir (`state-redis/`); buffered votes in its outbox
(`replica/outbox.sqlite`). It runs the projectors and serves reads; writes are forwarded to
`--primary` (`gateway.http.forwarding`); no reactions, triggers, distillation or consolidation.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import structlog

log = structlog.get_logger("zhiyi.replica")

HANDSHAKE_FILE = Path("replica") / "primary.json"


class ReplicaRefused(RuntimeError):
    """The replica must not start (one readable line for the operator)."""


def add_replica_parser(sub: Any, parents: list[argparse.ArgumentParser]) -> None:
    rp = sub.add_parser("replica", parents=parents,
                        help="a read replica of a primary on the LAN: its Redis replicates the primary's, "
                             "reads are served here, writes forwarded")
    rp.add_argument("--primary", required=True, help="the primary's HTTP base URL, e.g. http://10.0.0.5:7821")
    rp.add_argument("--primary-redis", required=True,
                    help="the primary's Redis for replication, redis://zhiyi-replica:PASSWORD@10.0.0.5:6380 "
                         "(printed by `zhiyi up --redis-bind`)")
    rp.set_defaults(func=cmd_replica)


def cmd_replica(args: argparse.Namespace) -> int:
    try:
        return _run(args)
    except ReplicaRefused as exc:
        print(f"zhiyi replica: {exc}", file=sys.stderr)
        return 2


def _run(args: argparse.Namespace) -> int:
    from gateway.cli.main import admin_key, build_settings
    from gateway.cli.maintenance import refuse_outdated
    from gateway.process import embedded_redis
    from gateway.process.server import serve_forever

    env = args.env
    if not env.replica_key:
        raise ReplicaRefused("set ZHIYI_REPLICA_KEY to the key the primary's admin issued "
                             "(POST /api/v1/admin/replicas on the primary)")
    try:
        primary_redis = embedded_redis.ReplicaOf.from_url(args.primary_redis)
    except ValueError as exc:
        raise ReplicaRefused(str(exc)) from None
    data_dir = Path(args.data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    log_url = args.redis_url or env.redis_url
    started: list[embedded_redis.EmbeddedRedis] = []
    try:
        if log_url:
            _require_replicating(log_url, primary_redis)
        else:
            started.append(embedded_redis.start(data_dir, replica_of=primary_redis))
            log_url = started[-1].url
        started.append(embedded_redis.start(data_dir, name="state-redis"))
        key, where = admin_key(data_dir, env.api_key)
        settings = build_settings(args, log_url, api_key=key, run_projectors=True, run_background=False, server=True)
        settings = dataclasses.replace(
            settings, primary_url=args.primary.rstrip("/"), primary_redis=embedded_redis.redact(args.primary_redis),
            replica_key=env.replica_key, state_redis_url=started[-1].url, llm_endpoint=None, tick_interval_s=0,
            run_reactions=False, run_scheduler=False, replica_auth_grace_s=env.replica_auth_grace_s)
        if refuse_outdated(settings):
            return 2
        asyncio.run(_handshake(settings))
        print(f"zhiyi: replica {settings.instance_id} serving reads on http://{settings.host}:{settings.port}; "
              f"writes go to {settings.primary_url}; its Redis replicates {primary_redis.address} "
              f"(data: {data_dir})", flush=True)
        print(f"zhiyi: admin API key is in {where} (use the primary's: set API_KEY)", flush=True)
        serve_forever(settings)
    finally:
        for server in reversed(started):
            server.stop()
    return 0


def _require_replicating(url: str, primary: Any) -> None:
    """`--redis-url`: a Redis whose ROLE shows it replicates `--primary-redis`, else refuse."""
    from events.redis import server_info
    from gateway.process.embedded_redis import redact

    try:
        same, what = server_info.replicates(url, primary.host, primary.port)
    except Exception as exc:  # noqa: BLE001 - any failure to ask is a refusal to start
        raise ReplicaRefused(f"cannot ask {redact(url)} for its ROLE: {exc}") from None
    if not same:
        raise ReplicaRefused(f"{redact(url)} is not a replica of {primary.address} (it is {what}): a replica reads "
                             "the log only through Redis replication (replicaof the primary's Redis)")


async def _handshake(settings: Any) -> None:
    """Refuse to start when the primary's embedding model is not this replica's (vectors are not in the
    log), or when the primary refuses the replica key. A primary that cannot be reached is checked
    against what it said last time; a first start needs it."""
    from gateway.process.model_services import make_embedding_model
    from replicas.primary_client import PrimaryClient, PrimaryOutcomeUnknown, PrimaryUnreachable, PushRefused

    embedder = make_embedding_model(settings)
    try:
        mine = embedder.model_id
    finally:
        embedder.close()
    path = settings.data_dir / HANDSHAKE_FILE
    client = PrimaryClient(settings.primary_url, settings.instance_id, settings.replica_key)
    try:
        health = await client.health()
        await client.push([], None)     # the key is checked (401: refused)
    except (PrimaryUnreachable, PrimaryOutcomeUnknown) as exc:
        if not path.exists():
            raise ReplicaRefused(f"the primary {settings.primary_url} cannot be reached, and this replica never "
                                 f"reached it: {exc}") from None
        health = json.loads(path.read_text())
        log.warning("replica.primary_unreachable_at_start", primary=settings.primary_url,
                    checked_against="the last handshake")
    except PushRefused as exc:
        raise ReplicaRefused(f"the primary refused this replica's key for instance {settings.instance_id} "
                             f"({exc}): issue one with POST /api/v1/admin/replicas "
                             f'{{"instance_id": "{settings.instance_id}"}}') from None
    finally:
        await client.close()
    theirs = health.get("embedding_model")
    if theirs != mine:
        raise ReplicaRefused(f"the primary embeds with {theirs!r}, this replica with {mine!r}: vectors are not in "
                             "the log, so both must use the same model (BGE_ENDPOINT / BGE_MODEL)")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"embedding_model": theirs, "primary": settings.primary_url}))
