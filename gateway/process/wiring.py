"""One wiring: every service of a zhiyi process, built from its settings.

`open_services` is the one place that builds the store, the readers, the recall service (which owns
its serving index), the command services, the scheduler, the reaction policies and the audit
writer; the HTTP app (`gateway.http.app`), every `zhiyi` command and the tests enter it.

- Each piece is built on first use, so a command opens only what it needs (`zhiyi tick` loads no
  embedding model, `zhiyi digest` connects to no Redis), and registers its own close on the exit
  stack right after it opens: pieces close in the reverse order of opening (a piece before what it
  was built on), each close bounded (a stuck or failing one is logged, the next still runs).
- The models are `gateway.process.model_services.ModelServices`, which `Services` inherits.
- `gateway=True` (the HTTP app's process; `gateway.process.gateway_steps`) opens everything up front,
  with what only a long-running server wants (the durability check, the epoch guard, the in-memory
  followers of the activity and graph projections, the query-embedding child, the model warm-ups,
  the serving index's load), then
  registers the shutdown-ordered steps last so that they run first: the audit writer is flushed,
  then `stopping` is set and the runner tasks (started by the app) are stopped, then the background
  tasks are drained, then the rest closes.
"""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, AsyncIterator, Awaitable, Callable

from commands.episodes import EpisodeCommands
from commands.evaluation import EvalService
from commands.conflicts.detector import ConflictDetector
from commands.conflicts.judge import PairModel
from commands.conflicts.service import ConflictCommands
from commands.handlers import CommandService
from commands.rate_limits import RateLimiter
from commands.replica_ops import ReplicaOps
from commands.distill.batcher import DistillBatcher
from commands.llm import ChatClient
from commands.reactions.runner import ReactionsRunner
from commands.scheduler import Scheduler
from commands.consolidation.service import ConsolidationService
from commands.triggers.service import TriggerService
from events.clock import Clock, SystemClock
from events.redis.answer_cache import RecallCache
from events.redis.client import connect
from events.redis.counters import Counters
from events.redis.instances import Instances
from events.redis.rate_buckets import TokenBuckets
from events.redis.store import EventStore
from gateway.http.audit import SPILL_DIR as AUDIT_SPILL_DIR
from gateway.http.audit import AuditWriter
from gateway.http.epoch_guard import EpochGuard
from gateway.process.policies import reaction_policies
from gateway.process.replica_side import build_replica
from gateway.process.triggers import build_triggers
from gateway.process.queries import Queries, build_queries
from gateway.process.settings import Settings
from gateway.process.gateway_steps import open_gateway
from gateway.process.learning_services import LearningServices
from gateway.process.model_services import ModelServices, make_embedding_model
from gateway.process.shutdown import close_bounded, close_quietly
from projections.activity.reader import ActivityReader, RecallCounts
from projections.core.registry import NAMES, projection_dir
from projections.core.runner_set import RunnerSet
from projections.core.waiter import CheckpointWaiter
from projections.episodes.reader import EpisodesReader
from projections.graph.reader import GraphReader
from projections.memories.reader import MemoriesReader
from projections.models.cached_embedder import CachedEmbedder
from projections.queries.recall.service import RecallService
from projections.serving.followers import ProjectionFollower
from projections.serving.prefetch import PrefetchPartners
from projections.synonyms.reader import SynonymsReader
from projections.conflicts.reader import ConflictsReader
from projections.consolidation.reader import ConsolidationReader, DecayRates
from projections.metrics.reader import MetricsReader
from projections.tombstones.reader import TombstonesReader
from replicas.runtime import ReplicaRuntime


@dataclass(eq=False)
class Services(ModelServices, LearningServices):
    """The services of one process, each built on first use (see the module doc); enter
    `open_services` rather than building one."""

    settings: Settings
    clock: Clock
    origin: str                     # the store's origin: stamped on every event it appends
    gateway: bool                   # the HTTP app's process (see the module doc)
    _stack: AsyncExitStack = field(repr=False)
    _injected_embedder: CachedEmbedder | None = field(default=None, repr=False)  # tests share one loaded model
    stopping: asyncio.Event = field(default_factory=asyncio.Event)          # the runners watch it
    runner_tasks: list[asyncio.Task] = field(default_factory=list)          # started by the app
    background: set[asyncio.Task] = field(default_factory=set)             # fire-and-forget, drained on close
    _followers: list[ProjectionFollower] = field(default_factory=list, init=False, repr=False)

    # ------------------------------------------------------------------ closing

    def _closes(self, close: Callable[[], Awaitable[Any]], what: str) -> None:
        self._stack.push_async_callback(close_bounded, close, what)

    def _closes_sync(self, close: Callable[[], Any], what: str) -> None:
        self._stack.callback(close_quietly, close, what)

    # ------------------------------------------------------------------ the log

    @cached_property
    def store(self) -> EventStore:
        redis = connect(self.settings.redis_url)
        self._closes(redis.aclose, "redis")
        local = None
        if self.settings.state_redis_url:   # a LAN replica: its checkpoints and caches in its own Redis
            local = connect(self.settings.state_redis_url)
            self._closes(local.aclose, "state_redis")
        return EventStore(redis, origin=self.origin, durable=self.settings.durable, local=local)

    @cached_property
    def instances(self) -> Instances:
        """This process's heartbeats (a replica's in its own Redis: the primary lists it from the
        heartbeats its link sends) and the list of every instance (events.redis.instances)."""
        return Instances(self.store.state)

    @cached_property
    def replica(self) -> ReplicaRuntime | None:
        """A LAN replica's client to its primary, outbox and link (None on a primary)."""
        return build_replica(self) if self.settings.is_replica else None

    @cached_property
    def counters(self) -> Counters:
        return Counters(self.store.redis)

    @cached_property
    def waiter(self) -> CheckpointWaiter:
        # without projectors in this process nothing notifies the waiters: they poll the checkpoints
        return CheckpointWaiter(self.store, poll_s=0.02 if self.settings.run_projectors else 0.005)

    @cached_property
    def epoch_guard(self) -> EpochGuard:
        return EpochGuard(self.store, self.settings.data_dir, reopen=self.reopen)

    # ------------------------------------------------------------------ read models

    @cached_property
    def memories(self) -> MemoriesReader:
        return self._reader(MemoriesReader(self._dir("memories")), "memories")

    @cached_property
    def synonyms(self) -> SynonymsReader:
        return self._reader(SynonymsReader(self._dir("synonyms")), "synonyms")

    @cached_property
    def activity(self) -> ActivityReader:
        return self._reader(ActivityReader(self._dir("activity")), "activity")

    @cached_property
    def graph(self) -> GraphReader:
        return self._reader(GraphReader(self._dir("graph")), "graph")

    @cached_property
    def tombstones(self) -> TombstonesReader:
        return self._reader(TombstonesReader(self._dir("tombstones")), "tombstones")

    @cached_property
    def pair_model(self) -> PairModel:
        """The learned pair judge's weights (commands/conflicts/pair_model.json)."""
        return PairModel.load()

    @cached_property
    def conflicts(self) -> ConflictsReader:
        return self._reader(ConflictsReader(self._dir("conflicts")), "conflicts")

    @cached_property
    def conflict_commands(self) -> ConflictCommands:
        return ConflictCommands(self.store, self.conflicts, self.memories)

    @cached_property
    def consolidation_reader(self) -> ConsolidationReader:
        return self._reader(ConsolidationReader(self._dir("consolidation")), "consolidation")

    @cached_property
    def metrics(self) -> MetricsReader:
        return self._reader(MetricsReader(self._dir("metrics")), "metrics")

    @cached_property
    def decay_rates(self) -> DecayRates:
        """The calibrated decay rates (deep consolidation) as recall, the versions view and the stale rule read them."""
        return DecayRates(self.consolidation_reader)

    @cached_property
    def episodes(self) -> EpisodesReader:
        return self._reader(EpisodesReader(self._dir("episodes")), "episodes")

    def _dir(self, name: str) -> Any:
        return projection_dir(self.settings.data_dir, name)

    def _reader(self, reader: Any, name: str) -> Any:
        self._closes_sync(reader.close, name)
        return reader

    @cached_property
    def recall_counts(self) -> RecallCounts:
        """The activity projection's recall counts, followed in memory (the gateway's recalls)."""
        return self._follower(RecallCounts(self.activity), "recall_counts")

    @cached_property
    def partners(self) -> PrefetchPartners:
        """The graph's CO_OCCURS partners, followed in memory (the gateway's prefetch)."""
        return self._follower(PrefetchPartners(self.graph), "prefetch_partners")

    def _follower(self, follower: Any, name: str) -> Any:
        self._followers.append(follower)
        self._closes(follower.close, name)
        return follower

    # ------------------------------------------------------------------ queries and commands

    @cached_property
    def recall(self) -> RecallService:
        """Recall as the gateway serves it; `zhiyi eval` and the reactions use the same. The gateway's
        follows the activity and graph projections in memory, a command's reads them directly."""
        recall = RecallService(self.memories, self.embedder, synonyms=self.synonyms, reranker=self.reranker,
                               serving=True, activity=self.recall_counts if self.gateway else self.activity,
                               clock=self.clock, graph=self.graph, query_embedder=self.query_embedder,
                               partners=self.partners if self.gateway else None, rates=self.decay_rates,
                               values=self.memory_values if self.gateway else self.learning)
        self._closes(recall.close, "serving_index")
        return recall

    @cached_property
    def recall_cache(self) -> RecallCache:
        return RecallCache(self.store.state, self.settings.recall_cache_ttl_s)

    @cached_property
    def commands(self) -> CommandService:
        # commits are checked where they are served (a CLI command commits nothing and needs no recall)
        detector = ConflictDetector(self.recall, self.pair_model) if self.settings.conflict_check and self.gateway \
            else None
        return CommandService(self.store, self.settings.limits, conflicts=detector)

    @cached_property
    def rate_limiter(self) -> RateLimiter | None:
        """Per-agent token buckets (None: limits off); a replica keeps its buckets in its own Redis."""
        limits = self.settings.rate_limits
        return RateLimiter(limits, TokenBuckets(self.store.state), self.store) if limits is not None else None

    @cached_property
    def replica_ops(self) -> ReplicaOps:
        """Replica keys, and the operations LAN replicas send (commands.replica_ops)."""
        return ReplicaOps(self.store, self.commands)

    @cached_property
    def episode_commands(self) -> EpisodeCommands:
        return EpisodeCommands(self.store)

    @cached_property
    def eval(self) -> EvalService:
        return EvalService(self.store, self.recall, self.memories)

    @cached_property
    def golden_sets(self) -> EvalService:
        """The evaluation service without a recall service: it generates golden sets (and loads no model)."""
        return EvalService(self.store, None, self.memories)

    @cached_property
    def projectors(self) -> list[str]:
        """Names of the projectors the deployment runs (here or in another process)."""
        return list(NAMES)

    @cached_property
    def queries(self) -> Queries:
        """The read use cases the HTTP handlers call."""
        return build_queries(store=self.store, memories=self.memories, activity=self.activity, recall=self.recall,
                             recall_cache=self.recall_cache, clock=self.clock, projectors=self.projectors,
                             rates=self.decay_rates)

    @cached_property
    def scheduler(self) -> Scheduler:
        s = self.settings
        return Scheduler(self.store, self.commands, self.memories, self.activity, self.waiter, self.clock,
                         graph=self.graph, capacity=s.forget_capacity, wait_s=s.projection_wait_s,
                         rates=self.decay_rates, ephemeral_ttl_s=s.ephemeral_ttl_s)

    @cached_property
    def consolidation(self) -> ConsolidationService:
        return ConsolidationService(self.store, self.memories, self.consolidation_reader, self.episodes,
                                    self.scheduler, self.waiter, self.clock, embedder=self.embedder, llm=self.llm)

    @cached_property
    def triggers(self) -> TriggerService:
        """The eight triggers (seed 6.4) with the actions this process can run."""
        return build_triggers(self)

    # ------------------------------------------------------------------ background work

    @cached_property
    def llm(self) -> ChatClient | None:
        s = self.settings
        if not s.llm_endpoint:
            return None
        llm = ChatClient(s.llm_endpoint, s.llm_model, s.llm_api_key, counters=self.counters,
                         daily_limit=s.llm_daily_limit, clock=self.clock)
        self._closes(llm.close, "llm_client")
        return llm

    @cached_property
    def distill_llm(self) -> ChatClient | None:
        """The chat model for distillation, on its own daily budget (`ZHIYI_LLM_DISTILL_DAILY_LIMIT`)."""
        s = self.settings
        if not s.llm_endpoint:
            return None
        llm = ChatClient(s.llm_endpoint, s.llm_model, s.llm_api_key, counters=self.counters,
                         daily_limit=s.llm_distill_daily_limit, clock=self.clock, budget="distill")
        self._closes(llm.close, "distill_llm_client")
        return llm

    @cached_property
    def distill_batcher(self) -> DistillBatcher | None:
        """The LLM distillation queue's worker (None without an LLM, or in a process without reactions)."""
        s = self.settings
        if self.distill_llm is None or not s.run_reactions:
            return None
        return DistillBatcher(self.store, self.episodes, self.distill_llm, self.clock, batch_size=s.distill_batch_size,
                              max_wait_s=s.distill_max_wait_s, judge=self.distill_judge)

    @cached_property
    def reactions(self) -> ReactionsRunner | None:
        """The reactions runner (None when this process runs no reactions)."""
        if not self.settings.run_reactions:
            return None
        return ReactionsRunner(self.store, reaction_policies(self), consumer=self.settings.instance_id,
                               waiter=self.waiter)

    @cached_property
    def projector_runners(self) -> RunnerSet:
        """The projectors this process runs (`settings.projectors_only`, else all); they stop, wait and
        reopen through a reset log (projections.core.runner_set)."""
        return RunnerSet(self.store, self.settings.data_dir, self.embedder, only=self.settings.projectors_only,
                         notify=self.waiter.notify)

    @cached_property
    def audit(self) -> AuditWriter:
        """The buffered `recall.served` writer (the gateway starts it)."""
        sink = self.replica.sink if self.replica is not None else self.store   # a replica's go to its primary
        audit = AuditWriter(sink, spill_dir=self.settings.data_dir / AUDIT_SPILL_DIR,
                            instance=self.settings.instance_id)
        self._closes(audit.close, "audit")
        return audit

    async def reopen(self, epoch: str) -> None:
        """The projections were swapped (`zhiyi replay --in-place`; the epoch guard calls this): drop
        every handle on the old folder; each reader reopens the new one on its next use, the
        followers and the serving index reload."""
        self.commands.forget_agents()  # registrations of a lost log must not authenticate
        for reader in (self.memories, self.activity, self.graph, self.tombstones, self.synonyms, self.episodes,
                       self.conflicts, self.consolidation_reader, self.metrics):
            reader.close()
        for follower in self._followers:
            await follower.reset()
        await self.recall.reload()


@asynccontextmanager
async def open_services(settings: Settings, *, clock: Clock | None = None, embedder: CachedEmbedder | None = None,
                        origin: str | None = None, gateway: bool = False) -> AsyncIterator[Services]:
    """The services of this process, closed when the block ends (see the module doc).

    `clock` (events.clock): the scheduler's and the query-time scores' now (the system clock by
    default). `embedder`: an already loaded model to share (its owner closes it); else settings choose
    one. `origin`: stamped on appended events (the instance id by default)."""
    async with AsyncExitStack() as stack:
        services = Services(settings, clock if clock is not None else SystemClock(),
                            origin or settings.instance_id, gateway, stack, embedder)
        if gateway:
            await open_gateway(services, stack)
        yield services

