"""Typed application keys: every dependency the handlers use, injected by the app factory."""

from __future__ import annotations

import asyncio

from aiohttp import web

from commands.handlers import CommandService
from events.store import EventStore
from gateway.settings import Settings

SETTINGS = web.AppKey("settings", Settings)
STORE = web.AppKey("store", EventStore)
COMMANDS = web.AppKey("commands", CommandService)
RECALL = web.AppKey("recall", object)        # projections.queries.recall.RecallService
READER = web.AppKey("reader", object)        # projections.reader.MemoriesReader
AUDIT = web.AppKey("audit", object)                 # gateway.audit.AuditWriter (buffered recall.served)
RECALL_CACHE = web.AppKey("recall_cache", object)  # events.cache.RecallCache
RERANKER = web.AppKey("reranker", object)  # projections.rerank.Reranker or None
SYNONYMS = web.AppKey("synonyms", object)    # projections.queries.synonyms.SynonymsReader
GRAPH = web.AppKey("graph", object)          # projections.queries.graph.GraphReader
ACTIVITY = web.AppKey("activity", object)    # projections.queries.activity.ActivityReader
TOMBSTONES = web.AppKey("tombstones", object)  # projections.queries.tombstones.TombstonesReader
EVAL = web.AppKey("eval", object)            # commands.evaluation.EvalService
CLOCK = web.AppKey("clock", object)          # events.clock.Clock (injectable: tests move time)
SCHEDULER = web.AppKey("scheduler", object)  # commands.scheduler.Scheduler
REACTIONS = web.AppKey("reactions", object)  # commands.reactions.runner.ReactionsRunner or None
WAITER = web.AppKey("waiter", object)        # projections.waiter.CheckpointWaiter
EMBEDDER = web.AppKey("embedder", object)
PROJECTORS = web.AppKey("projectors", list)  # names of the projectors this deployment runs
BACKGROUND = web.AppKey("background", set)   # fire-and-forget tasks (recall.served), drained on shutdown
RUNNER_TASKS = web.AppKey("runner_tasks", list)
STOPPING = web.AppKey("stopping", asyncio.Event)
EPOCH_GUARD = web.AppKey("epoch_guard", object)  # gateway.epoch_guard.EpochGuard (log_reset before auth)
