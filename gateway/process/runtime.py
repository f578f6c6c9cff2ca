"""Opening and closing the app's resources (cleanup_ctx): Redis, store, embedder, read models, runners."""

from __future__ import annotations

import asyncio
import contextlib
from typing import AsyncIterator

import structlog
from aiohttp import web

from commands.evaluation import EvalService
from commands.handlers import CommandService
from commands.llm import ChatClient
from commands.reactions.cascade import CorrectionCascadePolicy
from commands.reactions.llm_entities import LLMEntityPolicy
from commands.reactions.quality import QualityNoticePolicy
from commands.reactions.runner import ReactionsRunner
from commands.reactions.validator import PassiveValidatorPolicy
from commands.scheduler import Scheduler
from events.redis.append_call import require_durable
from events.redis.answer_cache import RecallCache
from events.redis.client import connect
from events.redis.counters import Counters
from events.redis.store import EventStore
from gateway.http.appkeys import (
    ACTIVITY, AUDIT, BACKGROUND, CLOCK, COMMANDS, EMBEDDER, EPOCH_GUARD, EVAL, GRAPH, PROJECTORS, REACTIONS, READER, RECALL, RECALL_CACHE,
    RERANKER, RUNNER_TASKS, SCHEDULER, SETTINGS, STOPPING, STORE, SYNONYMS, TOMBSTONES, WAITER,
)
from gateway.http.audit import SPILL_DIR as AUDIT_SPILL_DIR
from gateway.http.audit import AuditWriter
from gateway.http.epoch_guard import EpochGuard
from gateway.process.settings import Settings
from projections.models.embedding import make_embedder
from projections.models.embedding_process import ProcessEmbedder
from projections.activity.reader import ActivityReader, RecallCounts
from projections.serving.prefetch import PrefetchPartners
from projections.graph.reader import GraphReader
from projections.queries.recall.service import RecallService
from projections.synonyms.reader import SynonymsReader
from projections.tombstones.reader import TombstonesReader
from projections.memories.reader import MemoriesReader
from projections.core.registry import NAMES, projection_dir
from projections.models.rerank import make_reranker
from projections.serving.index import ServingIndex
from projections.core.runner_set import RunnerSet
from projections.core.waiter import CheckpointWaiter

log = structlog.get_logger(__name__)


def build_recall(settings: Settings, reader: MemoriesReader, embedder, synonyms, *, activity=None,
                 clock=None, graph=None, query_embedder=None, partners=None) -> tuple[RecallService, object]:
    """The recall service as the gateway serves it (the CLI's `zhiyi eval` builds the same), and its
    reranker (None unless one is configured). The caller closes both (`recaller.index.close()`)."""
    reranker = (make_reranker(settings.rerank_endpoint, settings.rerank_api_key, settings.rerank_model)
                if settings.rerank_endpoint or settings.local_rerank else None)
    index = ServingIndex(projection_dir(settings.data_dir, "memories"))
    return RecallService(reader, embedder, synonyms=synonyms, reranker=reranker, index=index, activity=activity,
                         clock=clock, graph=graph, query_embedder=query_embedder, partners=partners), reranker


async def _stop_tasks(tasks: list[asyncio.Task], *, grace_s: float) -> None:
    """Let the runners stop on their own (they watch STOPPING), then cancel what is left; never
    wait on a task forever (one stuck in a provider call or a wait must not hang the shutdown)."""
    if not tasks:
        return
    _, pending = await asyncio.wait(tasks, timeout=grace_s)
    for task in pending:
        task.cancel()
    if pending:
        _, stuck = await asyncio.wait(pending, timeout=2.0)
        for task in stuck:
            log.warning("shutdown.task_stuck", task=task.get_name())
    for task in tasks:
        if task.done() and not task.cancelled() and task.exception() is not None:
            log.error("shutdown.task_failed", task=task.get_name(), error=str(task.exception()))


async def _bounded(awaitable, what: str, timeout_s: float = 10.0) -> None:
    """Await one shutdown step for at most `timeout_s`; a failure or a timeout is logged, not raised."""
    try:
        await asyncio.wait_for(awaitable, timeout_s)
    except asyncio.TimeoutError:
        log.error("shutdown.step_stuck", step=what, timeout_s=timeout_s)
    except Exception as exc:  # noqa: BLE001 - the remaining steps still run
        log.warning("shutdown.step_failed", step=what, error=str(exc))


async def warm_up(embedder) -> None:
    """Load the embedding model off the loop; a failure is logged (the first use loads it again)."""
    try:
        await asyncio.to_thread(embedder.warm_up)
    except Exception:  # noqa: BLE001 - the first request will load (and report) it again
        log.exception("embedding.warm_up_failed")


async def reopen_readers(app: web.Application, *followers) -> None:
    """The projections were swapped (`zhiyi replay --in-place`): drop every handle on the old folder;
    each reader reopens the new one on its next use, the serving index reloads."""
    app[COMMANDS].forget_agents()  # registrations of a lost log must not authenticate
    for reader in (app[READER], app[ACTIVITY], app[GRAPH], app[TOMBSTONES], app[SYNONYMS]):
        reader.close()
    for follower in followers:
        await follower.reset()
    await app[RECALL].index.close()
    await app[RECALL].index.refresh()


async def resources(app: web.Application) -> AsyncIterator[None]:
    settings = app[SETTINGS]
    redis = connect(settings.redis_url)
    if settings.durable:  # refuse to start rather than acknowledge writes whose fsync cannot be confirmed
        try:
            await require_durable(redis)
        except BaseException:
            await redis.aclose()
            raise
    store = EventStore(redis, origin=settings.instance_id, durable=settings.durable)
    owns_embedder = EMBEDDER not in app
    embedder = app[EMBEDDER] if not owns_embedder else make_embedder(
        bge_endpoint=settings.bge_endpoint, bge_api_key=settings.bge_api_key, bge_model=settings.bge_model,
        cache_path=str(settings.embedding_cache_path), threads=settings.embedding_threads)
    # without projectors in this process nothing notifies the waiters: they poll the checkpoints
    waiter = CheckpointWaiter(store, poll_s=0.02 if settings.run_projectors else 0.005)
    reader = MemoriesReader(projection_dir(settings.data_dir, "memories"))
    app[STORE] = store
    # the projections' epoch, expected by every append from now on (before any runner can append)
    app[EPOCH_GUARD] = EpochGuard(store, settings.data_dir)
    await app[EPOCH_GUARD].open()
    if owns_embedder:
        app[EMBEDDER] = embedder
    app[WAITER] = waiter
    app[READER] = reader
    app[COMMANDS] = CommandService(store, settings.limits)
    app[SYNONYMS] = SynonymsReader(projection_dir(settings.data_dir, "synonyms"))
    app[ACTIVITY] = ActivityReader(projection_dir(settings.data_dir, "activity"))
    app[GRAPH] = GraphReader(projection_dir(settings.data_dir, "graph"))
    app[TOMBSTONES] = TombstonesReader(projection_dir(settings.data_dir, "tombstones"))
    recall_counts = RecallCounts(app[ACTIVITY])
    partners = PrefetchPartners(app[GRAPH])
    query_embedder = ProcessEmbedder(settings.embedding_threads) \
        if settings.query_embedding_process and not settings.bge_endpoint else None
    app[RECALL], reranker = build_recall(settings, reader, embedder, app[SYNONYMS], activity=recall_counts,
                                         clock=app[CLOCK], graph=app[GRAPH], query_embedder=query_embedder,
                                         partners=partners)
    app[RERANKER] = reranker
    app[RECALL_CACHE] = RecallCache(redis, settings.recall_cache_ttl_s)
    app[EVAL] = EvalService(store, app[RECALL], reader)
    app[PROJECTORS] = list(NAMES)
    app[BACKGROUND] = set()
    app[AUDIT] = AuditWriter(store, spill_dir=settings.data_dir / AUDIT_SPILL_DIR, instance=settings.instance_id)
    app[AUDIT].start()
    app[STOPPING] = asyncio.Event()
    app[RUNNER_TASKS] = []
    closers: list = []  # async close() of clients the reactions use
    # the gateway's own model embeds queries unless a child does, and commits when projectors run here
    models = [query_embedder] if query_embedder is not None else []
    if owns_embedder and (query_embedder is None or settings.run_projectors):
        models.append(embedder)
    for model in models:
        warm = asyncio.create_task(warm_up(model), name="embedder:warm_up")
        app[BACKGROUND].add(warm)
        warm.add_done_callback(app[BACKGROUND].discard)
    await app[RECALL].index.refresh()  # starts loading the serving index; LanceDB serves meanwhile
    if settings.run_projectors:  # they stop, wait and reopen through a reset log (projections.core.runner_set)
        runners = RunnerSet(store, settings.data_dir, embedder, only=settings.projectors_only, notify=waiter.notify)
        app[RUNNER_TASKS].append(asyncio.create_task(runners.run(app[STOPPING]), name="projectors"))
        log.info("projectors.started", only=settings.projectors_only or "all")
    app[EPOCH_GUARD].reopen = lambda epoch: reopen_readers(app, recall_counts, partners)
    app[SCHEDULER] = Scheduler(store, app[COMMANDS], reader, app[ACTIVITY], waiter, app[CLOCK], graph=app[GRAPH],
                               capacity=settings.forget_capacity, wait_s=settings.projection_wait_s)
    app[REACTIONS] = None
    if settings.run_reactions:
        counters = Counters(redis)
        policies = [QualityNoticePolicy(reader, counters), PassiveValidatorPolicy(app[RECALL], reader, counters),
                    CorrectionCascadePolicy(app[GRAPH], store)]
        if settings.llm_endpoint:
            llm = ChatClient(settings.llm_endpoint, settings.llm_model, settings.llm_api_key, counters=counters,
                             daily_limit=settings.llm_daily_limit, clock=app[CLOCK])
            closers.append(llm.close)
            policies.append(LLMEntityPolicy(llm))
        app[REACTIONS] = ReactionsRunner(store, policies, consumer=settings.instance_id, waiter=waiter)
        app[RUNNER_TASKS].append(asyncio.create_task(app[REACTIONS].run(app[STOPPING]), name="reactions"))
        log.info("reactions.started", policies=[p.name for p in policies])
    if settings.run_scheduler and settings.tick_interval_s > 0:
        app[RUNNER_TASKS].append(asyncio.create_task(
            app[SCHEDULER].run(app[STOPPING], settings.tick_interval_s), name="scheduler"))
    try:
        yield
    finally:
        # every step bounded: one stuck close must not keep the process from exiting (it is logged)
        await _bounded(app[AUDIT].close(), "audit")  # the buffered recall.served events, before anything stops
        app[STOPPING].set()
        await _stop_tasks(app[RUNNER_TASKS], grace_s=10.0)
        if app[BACKGROUND]:
            await _bounded(asyncio.gather(*app[BACKGROUND], return_exceptions=True), "background")
        await _bounded(app[RECALL].index.close(), "serving_index")
        await _bounded(recall_counts.close(), "recall_counts")
        await _bounded(partners.close(), "prefetch_partners")
        reader.close()
        for close in closers:
            await _bounded(close(), "client")
        if reranker is not None:
            await _bounded(reranker.close(), "reranker")
        app[SYNONYMS].close()
        app[ACTIVITY].close()
        app[GRAPH].close()
        app[TOMBSTONES].close()
        if owns_embedder:
            with contextlib.suppress(Exception):
                embedder.close()
        if query_embedder is not None:
            await _bounded(asyncio.to_thread(query_embedder.close), "query_embedder")
        await _bounded(redis.aclose(), "redis")
