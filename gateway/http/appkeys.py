"""Typed application keys: every dependency the handlers use, assigned by the app's services context
(`gateway.http.app`) from the one wiring (`gateway.process.wiring`)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from aiohttp import web

from commands.conflicts.service import ConflictCommands
from commands.distill.batcher import DistillBatcher
from commands.episodes import EpisodeCommands
from commands.evaluation import EvalService
from commands.handlers import CommandService
from commands.rate_limits import RateLimiter
from commands.replica_ops import ReplicaOps
from commands.reactions.runner import ReactionsRunner
from commands.scheduler import Scheduler
from commands.consolidation.service import ConsolidationService
from commands.triggers.service import TriggerService
from projections.consolidation.reader import ConsolidationReader
from projections.metrics.reader import MetricsReader
from gateway.http.telemetry import Telemetry
from gateway.push.hub import PushHub
from commands.learning.service import LearningCommands
from projections.learning.reader import LearningReader
from events.clock import Clock
from events.redis.answer_cache import RecallCache
from events.redis.store import EventStore
from gateway.http.audit import AuditWriter
from gateway.backup.jobs import BackupJobs
from gateway.process.queries import Queries
from gateway.process.settings import Settings
from projections.activity.reader import ActivityReader
from projections.conflicts.reader import ConflictsReader
from projections.core.waiter import CheckpointWaiter
from projections.episodes.reader import EpisodesReader
from projections.graph.reader import GraphReader
from projections.memories.reader import MemoriesReader
from projections.models.cached_embedder import CachedEmbedder
from projections.models.rerank import Reranker
from projections.queries.recall.service import RecallService
from projections.synonyms.reader import SynonymsReader
from projections.tombstones.reader import TombstonesReader
from replicas.runtime import ReplicaRuntime

if TYPE_CHECKING:  # it imports this module (its middleware reads EPOCH_GUARD)
    from gateway.http.epoch_guard import EpochGuard

SETTINGS = web.AppKey("settings", Settings)
STORE = web.AppKey("store", EventStore)
COMMANDS = web.AppKey("commands", CommandService)
REPLICA_OPS = web.AppKey("replica_ops", ReplicaOps)   # replica keys and operations (a primary's)
RATE_LIMITER: web.AppKey[RateLimiter | None] = web.AppKey("rate_limiter")  # None: limits off
REPLICA: web.AppKey[ReplicaRuntime | None] = web.AppKey("replica")  # a LAN replica's link (None: a primary)
RECALL = web.AppKey("recall", RecallService)
QUERIES = web.AppKey("queries", Queries)            # the read use cases (gateway.process.queries)
READER = web.AppKey("reader", MemoriesReader)
AUDIT = web.AppKey("audit", AuditWriter)            # buffered recall.served
RECALL_CACHE = web.AppKey("recall_cache", RecallCache)
RERANKER: web.AppKey[Reranker | None] = web.AppKey("reranker")  # None unless one is configured
SYNONYMS = web.AppKey("synonyms", SynonymsReader)
GRAPH = web.AppKey("graph", GraphReader)
ACTIVITY = web.AppKey("activity", ActivityReader)
TOMBSTONES = web.AppKey("tombstones", TombstonesReader)
EPISODES = web.AppKey("episodes", EpisodesReader)
CONFLICTS = web.AppKey("conflicts", ConflictsReader)
CONFLICT_COMMANDS = web.AppKey("conflict_commands", ConflictCommands)
EPISODE_COMMANDS = web.AppKey("episode_commands", EpisodeCommands)
DISTILL_BATCHER: web.AppKey[DistillBatcher | None] = web.AppKey("distill_batcher")  # None without an LLM
EVAL = web.AppKey("eval", EvalService)
CLOCK: web.AppKey[Clock] = web.AppKey("clock")      # injectable: tests move time
SCHEDULER = web.AppKey("scheduler", Scheduler)
TRIGGERS = web.AppKey("triggers", TriggerService)
PUSH = web.AppKey("push", PushHub)
LEARNING = web.AppKey("learning", LearningReader)
LEARNING_COMMANDS = web.AppKey("learning_commands", LearningCommands)
CONSOLIDATION = web.AppKey("consolidation", ConsolidationService)
CONSOLIDATION_READER = web.AppKey("consolidation_reader", ConsolidationReader)
METRICS = web.AppKey("metrics", MetricsReader)
TELEMETRY = web.AppKey("telemetry", Telemetry)      # the app's Prometheus registry
REACTIONS: web.AppKey[ReactionsRunner | None] = web.AppKey("reactions")  # None: no reactions in this process
WAITER = web.AppKey("waiter", CheckpointWaiter)
EMBEDDER = web.AppKey("embedder", CachedEmbedder)
PROJECTORS: web.AppKey[list[str]] = web.AppKey("projectors")  # names of the projectors this deployment runs
BACKGROUND: web.AppKey[set[asyncio.Task]] = web.AppKey("background")  # fire-and-forget (recall.served), drained
RUNNER_TASKS: web.AppKey[list[asyncio.Task]] = web.AppKey("runner_tasks")
STOPPING = web.AppKey("stopping", asyncio.Event)
BACKUPS = web.AppKey("backups", BackupJobs)     # POST /api/v1/admin/backup: archives written in the background
EPOCH_GUARD: web.AppKey[EpochGuard] = web.AppKey("epoch_guard")  # log_reset, checked before auth
