"""The aiohttp app factory: middlewares, routes, and one cleanup context that opens the services
(`gateway.process.wiring`), assigns the app keys and starts the runner tasks. Nothing imports `gateway`."""

from __future__ import annotations

import asyncio
import time
from typing import AsyncIterator

import structlog
from aiohttp import web

from events import positions
from events.clock import SystemClock
from gateway.backup.jobs import BackupJobs
from gateway.http.telemetry import Telemetry
from gateway.http.appkeys import (
    ACTIVITY, AUDIT, BACKGROUND, BACKUPS, CLOCK, COMMANDS, CONFLICT_COMMANDS, CONFLICTS, CONSOLIDATION, CONSOLIDATION_READER,
    DISTILL_BATCHER, EMBEDDER, EPISODE_COMMANDS, EPISODES, EPOCH_GUARD, EVAL, GRAPH, METRICS, PROJECTORS, QUERIES,
    REACTIONS,
    LEARNING, LEARNING_COMMANDS, PUSH, RATE_LIMITER, READER, RECALL, RECALL_CACHE, REPLICA, REPLICA_OPS, RERANKER, RUNNER_TASKS, SCHEDULER, SETTINGS, STOPPING, STORE, SYNONYMS, TOMBSTONES,
    TELEMETRY, TRIGGERS, WAITER,
)
from gateway.http.auth import PRINCIPAL, auth_middleware
from gateway.http.epoch_guard import epoch_middleware
from gateway.http.errors import error_middleware
from gateway.http.cors import cors_middleware
from gateway.http.forwarding import forward_middleware
from gateway.http.rate_limit import rate_limit_middleware
from gateway.http.request_schema import unknown_query_middleware
from gateway.http.handlers import (
    admin, agents, audit_log, backups, conflicts, consolidation, episodes, evaluation, feedback, graph, instances, memories, metrics,
    learning, prometheus, push, recall, replicas, sessions, synonyms, system, tombstones,
)
from gateway.process.gateway_steps import follow_serving_index
from gateway.process.instance_beat import beat_until
from gateway.process.wiring import Services, open_services
from gateway.process.settings import Settings

access_log = structlog.get_logger("zhiyi.access")
log = structlog.get_logger(__name__)


@web.middleware
async def access_log_middleware(request: web.Request, handler) -> web.StreamResponse:
    started = time.perf_counter()
    response = await handler(request)
    took = time.perf_counter() - started
    who = request.get(PRINCIPAL)
    access_log.info("http", method=request.method, path=request.path, status=response.status,
                    ms=round(took * 1000, 2), agent=(who.agent_id or "admin") if who else None)
    resource = request.match_info.route.resource
    # by route template, never by raw path (unbounded label values)
    request.app[TELEMETRY].observe(resource.canonical if resource is not None else "unmatched", request.method, took)
    return response


def create_app(settings: Settings, *, embedder=None, clock=None) -> web.Application:
    """Build the app. `embedder` may be injected (tests share one loaded model); else settings choose it.
    `clock` (events.clock) is the scheduler's and the query-time scores' now; the system clock by default."""
    app = web.Application(
        client_max_size=settings.max_body_bytes,
        # a replica forwards its writes before they are guarded or authenticated (the primary does both)
        middlewares=[cors_middleware, access_log_middleware, error_middleware,
                     *([forward_middleware] if settings.is_replica else []),
                     epoch_middleware, auth_middleware, rate_limit_middleware, unknown_query_middleware],
    )
    app[SETTINGS] = settings
    if embedder is not None:
        app[EMBEDDER] = embedder
    app[CLOCK] = clock if clock is not None else SystemClock()
    app[TELEMETRY] = Telemetry()
    app.cleanup_ctx.append(services)
    app.on_shutdown.append(_close_sockets)
    for module in (system, audit_log, agents, memories, episodes, feedback, admin, tombstones, recall, synonyms, evaluation,
                   graph, conflicts, consolidation, metrics, prometheus, instances, replicas, sessions, backups, push,
                   learning):
        app.add_routes(module.routes())
    return app


async def services(app: web.Application) -> AsyncIterator[None]:
    """The app's services for its lifetime: opened (`gateway=True`), assigned to the app keys, the
    runner tasks started; on shutdown the wiring flushes the audit, stops the runners, closes the rest."""
    async with open_services(app[SETTINGS], clock=app[CLOCK], embedder=app.get(EMBEDDER), gateway=True) as s:
        app[STORE], app[EPOCH_GUARD], app[WAITER], app[EMBEDDER] = s.store, s.epoch_guard, s.waiter, s.embedder
        app[READER], app[SYNONYMS], app[ACTIVITY], app[GRAPH], app[TOMBSTONES] = \
            s.memories, s.synonyms, s.activity, s.graph, s.tombstones
        app[EPISODES], app[EPISODE_COMMANDS] = s.episodes, s.episode_commands
        app[CONFLICTS], app[CONFLICT_COMMANDS] = s.conflicts, s.conflict_commands
        app[DISTILL_BATCHER] = s.distill_batcher
        app[COMMANDS], app[RECALL], app[RERANKER], app[RECALL_CACHE], app[QUERIES], app[EVAL] = \
            s.commands, s.recall, s.reranker, s.recall_cache, s.queries, s.eval
        app[SCHEDULER], app[REACTIONS], app[AUDIT], app[PROJECTORS] = s.scheduler, s.reactions, s.audit, s.projectors
        app[TRIGGERS], app[CONSOLIDATION], app[CONSOLIDATION_READER] = s.triggers, s.consolidation, s.consolidation_reader
        app[METRICS], app[REPLICA_OPS], app[REPLICA] = s.metrics, s.replica_ops, s.replica
        app[RATE_LIMITER] = s.rate_limiter
        app[PUSH] = s.push_hub
        app[LEARNING], app[LEARNING_COMMANDS] = s.learning, s.learning_commands
        app[BACKGROUND], app[STOPPING], app[RUNNER_TASKS] = s.background, s.stopping, s.runner_tasks
        app[BACKUPS] = BackupJobs(s.store.redis, app[SETTINGS].backups_path, app[SETTINGS].data_dir,
                                  app[SETTINGS].embedding_cache_path)
        _start_runners(s)
        yield
        await app[BACKUPS].stop()


async def _close_sockets(app: web.Application) -> None:
    """Push sockets are long requests: close them (1001, going away) so shutdown does not wait on them."""
    if PUSH in app:
        await app[PUSH].close_all(1001, "server shutting down")


def _start_runners(s: Services) -> None:
    """The projectors (when they run in this process), the reactions (with the LLM distillation queue)
    and the triggers (seed 6.4: the LLM distillation queue, sweeps, prune, decay, consolidation), as
    tasks that stop when `s.stopping` is set (the wiring sets it and waits for them on shutdown)."""
    settings = s.settings
    if settings.run_projectors:
        s.runner_tasks.append(asyncio.create_task(s.projector_runners.run(s.stopping), name="projectors"))
        log.info("projectors.started", only=settings.projectors_only or "all")
    if s.reactions is not None:
        s.runner_tasks.append(asyncio.create_task(s.reactions.run(s.stopping), name="reactions"))
        log.info("reactions.started", policies=[p.name for p in s.reactions.policies])
    s.runner_tasks.append(asyncio.create_task(follow_serving_index(s.recall, s.stopping), name="serving_index"))
    s.runner_tasks.append(asyncio.create_task(s.push_hub.run(s.stopping), name="push_hub"))
    s.runner_tasks.append(asyncio.create_task(
        beat_until(s.stopping, s.instances, settings.instance_id, settings.role, _gateway_record(s),
                   lambda: settings.role), name="heartbeat"))
    if s.replica is not None:   # buffered votes and the heartbeat to the primary
        s.runner_tasks.append(asyncio.create_task(s.replica.link.run(s.stopping), name="replica_link"))
        log.info("replica.link_started", primary=s.replica.client.base_url)
    if settings.run_scheduler and settings.tick_interval_s > 0:
        s.runner_tasks.append(asyncio.create_task(s.triggers.run(s.stopping, settings.tick_interval_s),
                                                  name="triggers"))
        log.info("triggers.started", interval_s=settings.tick_interval_s, disabled=s.triggers.disabled)


def _gateway_record(s: Services):
    """What a gateway's heartbeat records: the position its reads can reach (the lowest checkpoint of
    the deployment's projectors)."""
    async def record() -> dict:
        _, projectors = await s.queries.stats.projectors()
        cps = [p["position"] for p in projectors.values()]
        return {"position": None if None in cps or not cps else min(cps, key=positions.key),
                "url": s.settings.public_url}
    return record
