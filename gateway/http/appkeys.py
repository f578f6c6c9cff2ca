"""Typed application keys: every dependency the handlers use, injected by the app factory."""

from __future__ import annotations

import asyncio

from aiohttp import web

from commands.handlers import CommandService
from events.redis.store import EventStore
from gateway.process.settings import Settings

SETTINGS = web.AppKey("settings", Settings)
STORE = web.AppKey("store", EventStore)
COMMANDS = web.AppKey("commands", CommandService)
RECALL = web.AppKey("recall", object)        # projections.queries.recall.service.RecallService
READER = web.AppKey("reader", object)        # projections.memories.reader.MemoriesReader
AUDIT = web.AppKey("audit", object)                 # gateway.http.audit.AuditWriter (buffered recall.served)
RECALL_CACHE = web.AppKey("recall_cache", object)  # events.redis.answer_cache.RecallCache
RERANKER = web.AppKey("reranker", object)  # projections.models.rerank.Reranker or None
SYNONYMS = web.AppKey("synonyms", object)    # projections.synonyms.reader.SynonymsReader
GRAPH = web.AppKey("graph", object)          # projections.graph.reader.GraphReader
ACTIVITY = web.AppKey("activity", object)    # projections.activity.reader.ActivityReader
TOMBSTONES = web.AppKey("tombstones", object)  # projections.tombstones.reader.TombstonesReader
EVAL = web.AppKey("eval", object)            # commands.evaluation.EvalService
CLOCK = web.AppKey("clock", object)          # events.clock.Clock (injectable: tests move time)
SCHEDULER = web.AppKey("scheduler", object)  # commands.scheduler.Scheduler
REACTIONS = web.AppKey("reactions", object)  # commands.reactions.runner.ReactionsRunner or None
WAITER = web.AppKey("waiter", object)        # projections.core.waiter.CheckpointWaiter
EMBEDDER = web.AppKey("embedder", object)
PROJECTORS = web.AppKey("projectors", list)  # names of the projectors this deployment runs
BACKGROUND = web.AppKey("background", set)   # fire-and-forget tasks (recall.served), drained on shutdown
RUNNER_TASKS = web.AppKey("runner_tasks", list)
STOPPING = web.AppKey("stopping", asyncio.Event)
EPOCH_GUARD = web.AppKey("epoch_guard", object)  # gateway.http.epoch_guard.EpochGuard (log_reset before auth)
