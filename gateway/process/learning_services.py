"""The push hub and the self-improvement loop's services of one process (`gateway.process.wiring.Services`
inherits them): the WebSocket hub, the learning read model (V-values, skills, gaps, world model) and its
commands, the world model's graph reads and the gap trigger's repairer, each built on first use."""

from __future__ import annotations

from functools import cached_property
from typing import Any

from commands.learning.gap_repair import GapRepairer
from commands.learning.service import LearningCommands
from events.clock import Clock
from gateway.process.settings import Settings
from gateway.push.connection import PushLimits
from gateway.push.hub import PushHub
from gateway.push.lookups import ReadModelLookups
from projections.graph.world import WorldReader
from projections.learning.reader import LearningReader, MemoryValues
from projections.queries.push.router import PushRouter


class LearningServices:
    """What `Services` provides to these (declared here for the type checker)."""

    settings: Settings
    clock: Clock
    store: Any
    waiter: Any
    graph: Any
    memories: Any
    activity: Any
    recall: Any

    def _dir(self, name: str) -> Any: ...

    def _reader(self, reader: Any, name: str) -> Any: ...

    def _follower(self, follower: Any, name: str) -> Any: ...

    @cached_property
    def push_hub(self) -> PushHub:
        """The WebSocket hub (seed 2.7): tails the log and pushes to this gateway's sockets."""
        limits = PushLimits(queue_messages=self.settings.push_queue_messages,
                            queue_bytes=self.settings.push_queue_bytes)
        lookups = ReadModelLookups(self.store, self.graph, self.memories, self.waiter)
        return PushHub(self.store, PushRouter(lookups), limits)

    @cached_property
    def learning(self) -> LearningReader:
        return self._reader(LearningReader(self._dir("learning")), "learning")

    @cached_property
    def memory_values(self) -> MemoryValues:
        """The V-values, followed in memory (the gateway's recall ranking)."""
        return self._follower(MemoryValues(self.learning), "memory_values")

    @cached_property
    def learning_commands(self) -> LearningCommands:
        return LearningCommands(self.store, self.activity, self.memories, self.learning, self.clock, self.waiter)

    @cached_property
    def world(self) -> WorldReader:
        """The graph's part of the world model (its own connection: the reaction reads it in a thread)."""
        return self._reader(WorldReader(self._dir("graph")), "world")

    @cached_property
    def gap_repairer(self) -> GapRepairer:
        return GapRepairer(self.recall, self.store, self.learning, self.waiter)
