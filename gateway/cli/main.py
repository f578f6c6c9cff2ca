"""The `zhiyi` command: the composition root (the environment is read once, `Environment.read`)."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import secrets
import signal
import sys
from pathlib import Path

import structlog

from gateway.process.logging_setup import configure_logging
from gateway.process.settings import Environment, Settings, absolute_path
from projections.core.heap import fix_mmap_threshold

log = structlog.get_logger("zhiyi.cli")

DEFAULT_PORT = 7821


def admin_key(data_dir: Path, env_key: str | None) -> tuple[str, str]:
    """(key, where): API_KEY from the environment, else <data-dir>/api_key (generated, mode 600)."""
    if env_key:
        return env_key, "the API_KEY environment variable"
    path = data_dir / "api_key"
    if not path.exists():
        data_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write("zka_" + secrets.token_urlsafe(32) + "\n")
    os.chmod(path, 0o600)
    return path.read_text().strip(), str(path.resolve())


def build_settings(args: argparse.Namespace, redis_url: str, *, api_key: str = "", run_projectors: bool = True,
                   only: tuple[str, ...] = (), run_background: bool | None = None, server: bool = False) -> Settings:
    """`run_background` (default: with the projectors): this process hosts the reactions and the
    scheduler. `server` (`zhiyi up`, `serve`, `project`): the instance id is kept in the data dir (made
    on the first start) and claimed while the process runs."""
    background = run_projectors if run_background is None else run_background
    env: Environment = args.env
    return Settings(
        redis_url=redis_url,
        data_dir=Path(args.data_dir),
        api_key=api_key,
        host=getattr(args, "host", "127.0.0.1"),
        port=getattr(args, "port", DEFAULT_PORT),
        instance_id=env.default_instance_id(Path(args.data_dir), create=server),
        claim_instance=server,
        durable=env.durable,
        bge_endpoint=env.bge_endpoint,
        bge_api_key=env.bge_api_key,
        bge_model=env.bge_model,
        embedding_threads=env.embedding_threads,
        query_embedding_process=env.query_embedding_process,
        rerank_endpoint=env.rerank_endpoint,
        rerank_api_key=env.rerank_api_key,
        rerank_model=env.rerank_model,
        llm_endpoint=env.llm_endpoint,
        llm_api_key=env.llm_api_key,
        llm_model=env.llm_model,
        llm_daily_limit=env.llm_daily_limit,
        llm_distill_daily_limit=env.llm_distill_daily_limit,
        distill_extractor=env.distill_extractor,
        conflict_check=env.conflict_check,
        merge=env.merge,
        conflict_auto_resolve=env.conflict_auto_resolve,
        local_rerank=env.local_rerank,
        recall_cache_ttl_s=env.recall_cache_ttl_s,
        forget_capacity=env.forget_capacity,
        ephemeral_ttl_s=env.ephemeral_ttl_s,
        tick_interval_s=env.tick_interval_s,
        run_projectors=run_projectors,
        run_reactions=background and not env.no_reactions,
        run_scheduler=background,
        ready_file=Path(args.ready_file) if getattr(args, "ready_file", None) else None,
        projectors_only=only,
        log_json=env.log_json,
        advertise_url=env.advertise_url,
        cors_origins=env.cors_origins,
        rate_limits=env.rate_limits,
        backup_dir=Path(env.backup_dir) if env.backup_dir else None,
    )


def _redis_url(args: argparse.Namespace) -> str:
    from gateway.process.embedded_redis import resolve_url

    return resolve_url(args.redis_url, args.env.redis_url, Path(args.data_dir))


# ----------------------------------------------------------------------------- commands


def cmd_up(args: argparse.Namespace) -> int:
    from gateway.process import embedded_redis
    from gateway.process.server import serve_forever

    data_dir = Path(args.data_dir)
    data_dir.mkdir(parents=True, exist_ok=True)
    from gateway.cli.maintenance import refuse_outdated

    if refuse_outdated(build_settings(args, "")):  # built by an older zhiyi: say how to rebuild, start nothing
        return 2
    embedded = None
    url = args.redis_url or args.env.redis_url
    durable = args.env.durable
    lan = embedded_redis.lan_access(data_dir, args.redis_bind) if args.redis_bind else None
    if (lan or args.redis_port) and url:
        print("zhiyi up: --redis-bind and --redis-port configure the embedded Redis; with REDIS_URL set, "
              "configure that server instead", file=sys.stderr)
        return 2
    if not url:
        embedded = embedded_redis.start(data_dir, durable=durable, lan=lan, port=args.redis_port)
        url = embedded.url
    if durable:  # before anything starts: refuse durable mode on a server that cannot confirm fsyncs
        try:
            embedded_redis.check_durable(url)
        except Exception:
            if embedded is not None:
                embedded.stop()
            raise
    key, where = admin_key(data_dir, args.env.api_key)
    # projectors in a child process (gateway/process/projector_process.py), unless ZHIYI_INPROCESS_PROJECTORS
    inprocess = args.env.inprocess_projectors
    settings = build_settings(args, url, api_key=key, run_projectors=inprocess, run_background=True, server=True)
    print(f"zhiyi: serving on http://{settings.host}:{settings.port}  (data: {data_dir.resolve()}, "
          f"redis: {embedded_redis.redact(url)})", flush=True)
    if lan is not None and embedded is not None:
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        print(f"zhiyi: LAN replicas replicate from redis://{embedded_redis.REPLICA_USER}:PASSWORD@{lan.bind}:{port} "
              f"(`zhiyi replica --primary-redis`; PASSWORD is in "
              f"{data_dir.resolve() / embedded_redis.REPLICA_PASSWORD_FILE})", flush=True)
    print(f"zhiyi: admin API key is in {where}", flush=True)
    projectors = None
    try:
        if not inprocess:
            from gateway.process.projector_process import ProjectorProcess

            projectors = ProjectorProcess(data_dir, url)
            projectors.start()
        serve_forever(settings)
    finally:
        if projectors is not None:
            projectors.stop()
        if embedded is not None:
            embedded.stop()
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from gateway.process.server import serve_forever

    from gateway.cli.maintenance import refuse_outdated

    key, where = admin_key(Path(args.data_dir), args.env.api_key)
    settings = build_settings(args, _redis_url(args), api_key=key, run_projectors=False, server=True)
    if refuse_outdated(settings):
        return 2
    if settings.durable:
        from gateway.process.embedded_redis import check_durable

        check_durable(settings.redis_url)
    print(f"zhiyi: gateway on http://{settings.host}:{settings.port} (projectors run elsewhere); "
          f"admin API key in {where}", flush=True)
    serve_forever(settings)
    return 0


def cmd_project(args: argparse.Namespace) -> int:
    if args.parent_pid:  # started by `zhiyi up`: go when it goes
        from gateway.process.projector_process import die_with_parent

        die_with_parent(args.parent_pid)
    from gateway.process.server import run_projectors

    settings = build_settings(args, _redis_url(args), only=tuple(args.only or ()), server=True)
    if args.parent_pid:   # supervised by `zhiyi up`, which runs one child at a time (and restarts a dead one)
        settings = dataclasses.replace(settings, claim_instance=False)
    return asyncio.run(run_projectors(settings))


def cmd_digest(args: argparse.Namespace) -> int:
    from gateway.cli.maintenance import print_digests

    settings = build_settings(args, _redis_url(args))
    return asyncio.run(print_digests(settings, as_json=args.json))


def cmd_replay(args: argparse.Namespace) -> int:
    from gateway.process import embedded_redis
    from gateway.cli.maintenance import replay

    if args.in_place and (args.until or args.verify):
        print("zhiyi replay: --in-place rebuilds up to the end of the log (no --until, no --verify)",
              file=sys.stderr)
        return 2
    embedded = None
    data_dir = Path(args.data_dir)
    if not (args.redis_url or args.env.redis_url or embedded_redis.recorded_url(data_dir)) \
            and (data_dir / "redis").is_dir():
        # the data dir's own server, with zhiyi stopped (e.g. rebuilding after an upgrade): start it for the command
        embedded = embedded_redis.start(data_dir)
    try:
        settings = build_settings(args, embedded.url if embedded else _redis_url(args))
        if args.in_place:
            from gateway.cli.maintenance import replay_in_place

            return asyncio.run(replay_in_place(settings, as_json=args.json, processes=args.processes))
        return asyncio.run(replay(settings, Path(args.into), until=args.until, verify=args.verify,
                                  as_json=args.json, processes=args.processes))
    finally:
        if embedded is not None:
            embedded.stop()


def cmd_events(args: argparse.Namespace) -> int:
    from gateway.cli.events import run_events_command
    from gateway.process.wiring import open_services

    async def main() -> int:
        async with open_services(build_settings(args, _redis_url(args)), origin="cli") as services:
            return await run_events_command(args, services.store, out=sys.stdout)

    try:
        return asyncio.run(main())
    except KeyboardInterrupt:
        return 0


def cmd_tick(args: argparse.Namespace) -> int:
    from gateway.cli.tick import run_tick_command

    settings = build_settings(args, _redis_url(args))
    return asyncio.run(run_tick_command(args, settings, sys.stdout, sys.stderr))


def cmd_triggers(args: argparse.Namespace) -> int:
    from gateway.cli.consolidation import run_triggers_command

    settings = build_settings(args, _redis_url(args))
    return asyncio.run(run_triggers_command(args, settings, sys.stdout, sys.stderr))


def cmd_consolidate(args: argparse.Namespace) -> int:
    from gateway.cli.consolidation import run_consolidate_command

    settings = build_settings(args, _redis_url(args))
    return asyncio.run(run_consolidate_command(args, settings, sys.stdout, sys.stderr))


def cmd_eval(args: argparse.Namespace) -> int:
    from gateway.cli.eval import run_eval_command

    settings = build_settings(args, _redis_url(args))
    return asyncio.run(run_eval_command(args, settings, sys.stdout, sys.stderr))


# ----------------------------------------------------------------------------- parser


def parser(env: Environment | None = None) -> argparse.ArgumentParser:
    from gateway.cli.events import add_events_parser

    env = env or Environment()

    p = argparse.ArgumentParser(prog="zhiyi", description="zhiyi (织忆, MemoryWeave): shared memory for LLM agents")
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--data-dir", default=env.data_dir,
                        help="live data directory (default ./data)")
    common.add_argument("--redis-url", default=None, help="Redis URL (else REDIS_URL, else the one `zhiyi up` wrote)")
    http = argparse.ArgumentParser(add_help=False)
    http.add_argument("--host", default="127.0.0.1")
    http.add_argument("--port", type=int, default=DEFAULT_PORT)
    sub = p.add_subparsers(dest="command", required=True)

    up = sub.add_parser("up", parents=[common, http],
                        help="gateway, reactions and scheduler, projectors in a child process; starts Redis if needed")
    up.add_argument("--redis-bind", default=None, metavar="ADDR",
                    help="the embedded Redis also listens on ADDR (for LAN replicas), password-protected, with a "
                         "replication-only user whose URL is printed")
    up.add_argument("--redis-port", type=int, default=None, help="the embedded Redis's port (default: a free one)")
    up.set_defaults(func=cmd_up)
    sub.add_parser("serve", parents=[common, http], help="the gateway alone").set_defaults(func=cmd_serve)
    pp = sub.add_parser("project", parents=[common], help="the projectors alone")
    pp.add_argument("--only", action="append", help="run only this projector (repeatable)")
    pp.add_argument("--ready-file", default=None, help="touch this file once the projectors run (used by `zhiyi up`)")
    pp.add_argument("--parent-pid", type=int, default=None, help=argparse.SUPPRESS)  # `zhiyi up`'s pid
    pp.set_defaults(func=cmd_project)
    dp = sub.add_parser("digest", parents=[common], help="logical digest of each live projection")
    dp.add_argument("--json", action="store_true")
    dp.set_defaults(func=cmd_digest)
    rp = sub.add_parser("replay", parents=[common], help="rebuild every projection from the log into DIR")
    target = rp.add_mutually_exclusive_group(required=True)
    target.add_argument("--into", help="empty directory to rebuild into")
    target.add_argument("--in-place", action="store_true",
                        help="after a log_reset: rebuild the data dir's projections from the current log beside "
                             "them, then swap them in (the old ones are kept as projections.<old epoch>/)")
    rp.add_argument("--until", default=None, help="stop at this position (time travel)")
    rp.add_argument("--verify", action="store_true",
                    help="rebuild twice up to the live position; fail unless both match the live digests")
    rp.add_argument("--processes", type=int, choices=(1, 2), default=None,
                    help="1: fold every projection in this process; 2: the graph projection in "
                         "a second process (default: 2 for a log of 20,000 events or more on 2 cores or more)")
    rp.add_argument("--json", action="store_true")
    rp.set_defaults(func=cmd_replay)
    add_events_parser(sub, parents=[common])
    from gateway.cli.eval import add_eval_parser

    add_eval_parser(sub, parents=[common])
    sub.choices["eval"].set_defaults(func=cmd_eval)
    from gateway.cli.tick import add_tick_parser

    add_tick_parser(sub, parents=[common])
    sub.choices["tick"].set_defaults(func=cmd_tick)
    from gateway.cli.consolidation import add_consolidation_parsers

    add_consolidation_parsers(sub, parents=[common])
    sub.choices["triggers"].set_defaults(func=cmd_triggers)
    sub.choices["consolidate"].set_defaults(func=cmd_consolidate)
    sub.choices["events"].set_defaults(func=cmd_events)
    from gateway.cli.replica import add_replica_parser

    add_replica_parser(sub, parents=[common, http])
    from gateway.cli.backup import add_backup_parsers

    add_backup_parsers(sub, parents=[common])
    return p


PATH_ARGS = ("data_dir", "into", "ready_file")


def _absolute_paths(args: argparse.Namespace) -> None:
    """Every path option made absolute once, here: `--data-dir ./data` (as `make up` passes it) must
    mean the same directory to the readers (`file:` URIs), the children and the messages."""
    for name in PATH_ARGS:
        value = getattr(args, name, None)
        if value:
            setattr(args, name, str(absolute_path(value)))


def main(argv: list[str] | None = None) -> int:
    try:
        env = Environment.read()
    except ValueError as exc:   # a malformed setting: one readable line, not a traceback
        print(f"zhiyi: bad environment: {exc}", file=sys.stderr)
        return 2
    args = parser(env).parse_args(argv)
    args.env = env
    _absolute_paths(args)
    configure_logging(json=env.log_json, level=env.log_level)
    fix_mmap_threshold()   # every zhiyi process: the serving index, the projectors, a replay
    if getattr(args, "func", None) is None:
        args.func = cmd_events
    from events.errors import EventLogError
    from gateway.process.embedded_redis import RedisNotFound
    from projections.core.errors import ProjectionError

    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        return 130
    except (RedisNotFound, ProjectionError, EventLogError) as exc:  # operator errors: one readable line
        print(f"zhiyi {args.command}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.exit(main())
