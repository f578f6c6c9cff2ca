"""The projection runner: tail the log from a projector's checkpoint, apply batches, publish.

- `catch_up(until)` folds everything after the checkpoint up to `until` (or the end) and
  returns the checkpoint; `run(stop)` tails forever (`XREAD BLOCK`) until `stop` is set.
- Before starting and before every read it checks `store.check_not_reset(checkpoint, epoch)` (with
  the read, in one round trip: `store.read_checked` / `store.tail_checked`): a
  checkpoint whose event is not in the log, or a log whose epoch is not the one the projection
  was folded from (`epoch`, see projections.core.epoch) — `LogResetError`: the log was lost or
  replaced — stops the runner loudly, never silently. A Redis that cannot be reached is not a
  reset: that is retried like any transient error.
- Reading the next batches (and the projector's optional `prepare`, e.g. embedding: one call
  per batch) overlaps with applying the current one; `prefetch` batches are read ahead, so on a
  multi-core box several batches are embedded at once.
- After each batch: `store.publish_checkpoint(name, pos)` and `notify(name, pos)`.
- A batch made only of event types the projector ignores (`Skipping.ignored_types`, e.g.
  `recall.served` for the projections that do not count recalls) is not applied: the checkpoint
  moves in memory (published and notified as for any batch) and the projector stores it with
  `advance` later — with its next applied batch (whose own checkpoint is later), on idle (an empty
  tail read), at the end of `catch_up`, on stop, and at least every `flush_every_s` otherwise. The
  stored checkpoint may lag the published one meanwhile: after a crash those events are re-read
  and skipped again (the rows are the same at both positions).
- Transient Redis errors (`events.redis.client.TRANSIENT_ERRORS`) are logged and retried with
  back-off (50 ms doubling to 2 s), so a runner resumes within ~2 s of Redis returning; the loop
  does not crash.
- Tailing, a read that finds only recall audits (`RECALL_AUDIT`) is held up to `gather_s` (0: not) for
  more to come — group commit: the gateway appends them every ~0.1 s, and a fold's fixed cost (a
  transaction, a checkpoint, a publish per projector) dwarfs a recall's own share when the batches
  are small. Any other event ends the wait at once (it and what came before are applied together),
  as does reaching `batch_size`; only the audits' effects (recall counts, co-recall edges, metrics)
  show that much later. What a batch folds to does not depend on its size, so the projections are
  the same either way.
- `projector.maintain()` (when it has one) runs at most every `maintain_every_s`, and only
  when something was applied since the previous run — or when the projector says upkeep is due
  (`upkeep_due()`: e.g. LanceDB versions its last run had to keep can be pruned now), also idle.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Awaitable, Callable

import structlog

from events import positions
from events.envelope import Event
from events.errors import LogResetError
from events.redis.client import RETRY_BACKOFF_MAX_S, TRANSIENT_ERRORS
from events.redis.store import EventStore
from projections.core.projector import (
    RECALL_AUDIT, Generational, Maintainable, Preparable, Projector, Skipping, after_checkpoint, generations,
)

log = structlog.get_logger(__name__)

TRANSIENT: tuple[type[BaseException], ...] = TRANSIENT_ERRORS

Reader = Callable[[str | None], Awaitable[list[Event]]]
Tail = Callable[[str | None, int], Awaitable[list[Event]]]   # (after, block ms) -> the events after it
SLOW_BATCH_MS = 100.0   # a batch that took longer is logged at info (the others at debug)


@dataclass(slots=True)
class _Item:
    kind: str  # "batch" | "idle" (an empty tail read) | "end" (caught up) | "error" | "stop" (stop was set)
    batch: list[Event] = field(default_factory=list)
    prepared: asyncio.Future[None] | None = None
    error: Exception | None = None


@dataclass
class ProjectionRunner:
    store: EventStore
    projector: Projector
    _: KW_ONLY
    batch_size: int = 500
    block_ms: int = 500
    notify: Callable[[str, str], None] | None = None
    maintain_every_s: float = 60.0
    prefetch: int = 2                 # batches read (and prepared, e.g. embedded) ahead of the applied one
    publish: bool = True              # False for scratch rebuilds: never touch the live checkpoints
    transient: tuple[type[BaseException], ...] = TRANSIENT
    backoff_max_s: float = RETRY_BACKOFF_MAX_S
    clock: Callable[[], float] = time.monotonic
    epoch: str | None = None          # the log the projection was folded from; None: not checked (scratch rebuilds)
    flush_every_s: float = 1.0        # a checkpoint moved past ignored events alone is stored at least this often
    gather_s: float = 0.0             # tailing: hold a batch of recall audits alone this long for more (0: not)
    checkpoint: str | None = field(default=None, init=False)
    events_applied: int = field(default=0, init=False)
    _dirty: bool = field(default=False, init=False)
    _last_maintain: float = field(default=0.0, init=False)
    _tailing: bool = field(default=False, init=False)
    _behind: str | None = field(default=None, init=False)   # checkpoint not stored yet (ignored events only)
    _behind_since: float = field(default=0.0, init=False)
    _ignored: frozenset[str] = field(default=frozenset(), init=False)
    _preparable: bool = field(default=False, init=False)
    _generational: bool = field(default=False, init=False)
    _maintainable: bool = field(default=False, init=False)
    _upkeep: Callable[[], bool] | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self._last_maintain = self.clock()
        # capabilities looked up once (runtime-checkable protocol checks cost ~20 µs each)
        self._ignored = frozenset(self.projector.ignored_types) if isinstance(self.projector, Skipping) else frozenset()
        self._preparable = isinstance(self.projector, Preparable)
        self._generational = isinstance(self.projector, Generational)
        self._maintainable = isinstance(self.projector, Maintainable)
        # a projector whose last maintain left work for later (LanceDB versions pruned one retention on)
        self._upkeep = getattr(self.projector, "upkeep_due", None) if self._maintainable else None

    @property
    def name(self) -> str:
        return self.projector.name

    # ------------------------------------------------------------------ public

    async def catch_up(self, until: str | None = None, *, shared: Reader | None = None) -> str | None:
        """Fold everything after the checkpoint up to `until` (inclusive) or the end. `shared`: the
        batches come from there instead (`projections.core.shared_reads`: the same reads as this
        runner's own, done once for several runners)."""
        try:
            cursor = await self._start(None)

            async def read(after: str | None) -> list[Event]:
                if shared is not None:
                    return await shared(after)
                return await self.store.read_checked(after, self.epoch, until, self.batch_size)

            cursor = await self._pump(read, cursor, None)
            await self._store_behind(None)
            return cursor
        except LogResetError as exc:
            log.error("projection.log_reset", projector=self.name, checkpoint=self.checkpoint, error=str(exc))
            raise

    async def run(self, stop: asyncio.Event) -> None:
        """Tail the log until `stop` is set. Raises (after logging) on a reset log or a failed apply."""
        try:
            cursor = await self._start(stop)

            async def tail(after: str | None, block_ms: int) -> list[Event]:
                return await self.store.tail_checked(after, self.epoch, count=self.batch_size, block_ms=block_ms)

            async def read(after: str | None) -> list[Event]:
                return await tail(after, self.block_ms)

            await self._pump(read, cursor, stop, tail if self.gather_s > 0 else None)
            await self._store_behind(None)
            log.info("projection.stopped", projector=self.name, position=self.checkpoint)
        except LogResetError as exc:
            log.error("projection.log_reset", projector=self.name, checkpoint=self.checkpoint, error=str(exc))
            raise
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("projection.failed", projector=self.name, position=self.checkpoint)
            raise

    # ------------------------------------------------------------------ loop

    async def _start(self, stop: asyncio.Event | None) -> str | None:
        self.checkpoint = await self.projector.load_checkpoint()
        cp = self.checkpoint
        await self._retry(lambda: self.store.check_not_reset(cp, self.epoch), "check", stop)
        if self.publish and cp:
            await self._retry(lambda: self.store.publish_checkpoint(self.name, cp, epoch=self.epoch), "publish", stop)
        log.info("projection.started", projector=self.name, position=cp)
        return cp

    async def _pump(self, read: Reader, cursor: str | None, stop: asyncio.Event | None,
                    gather: Tail | None = None) -> str | None:
        """Consume batches in order; a producer reads (and prepares) up to `prefetch` batches ahead.

        With `stop` (tailing) an empty read means "idle, read again"; without, "caught up". `gather`:
        how a batch of recall audits alone waits for more (see the module doc).
        """
        self._tailing = stop is not None
        queue: asyncio.Queue[_Item] = asyncio.Queue()
        slots = asyncio.Semaphore(self.prefetch + 1)  # the batch being applied + those read ahead
        halt = asyncio.Event()
        producer = asyncio.ensure_future(self._produce(read, cursor, halt, queue, slots, gather))
        watcher = asyncio.ensure_future(self._watch(stop, queue)) if stop is not None else None
        try:
            while True:
                item = await self._get(queue, stop)
                if item is None or item.kind == "end":
                    return cursor
                if item.kind == "error":
                    assert item.error is not None
                    raise item.error
                if item.kind == "idle":
                    await self._store_behind(stop)
                    await self._maybe_maintain()
                else:
                    assert item.prepared is not None
                    await item.prepared
                    await self._apply(item.batch, stop)
                    slots.release()
                    cursor = self.checkpoint
                    await self._maybe_maintain()
                if stop is not None and stop.is_set():
                    return cursor
        finally:
            if watcher is not None:
                watcher.cancel()
            await self._halt(producer, halt, slots, queue)

    async def _halt(self, producer: asyncio.Future[None], halt: asyncio.Event, slots: asyncio.Semaphore,
                    queue: asyncio.Queue[_Item]) -> None:
        """Stop the producer without cancelling a Redis command in flight (redis-py may then hang
        on that connection): it finishes its current read (at most `block_ms`) and sees `halt`."""
        halt.set()
        slots.release()
        try:
            await asyncio.wait_for(asyncio.shield(producer), self.block_ms / 1000 + 5.0)
        except TimeoutError:
            log.warning("projection.producer_stuck", projector=self.name)
            producer.cancel()
        except Exception:  # noqa: BLE001 - its errors were queued for the consumer already
            pass
        pending: list[asyncio.Future[Any]] = [producer]
        while not queue.empty():
            left = queue.get_nowait()
            if left.prepared is not None:
                left.prepared.cancel()  # embedding in a worker thread: safe to abandon
                pending.append(left.prepared)
        await asyncio.gather(*pending, return_exceptions=True)

    async def _produce(self, read: Reader, cursor: str | None, halt: asyncio.Event,
                       queue: asyncio.Queue[_Item], slots: asyncio.Semaphore, gather: Tail | None) -> None:
        try:
            while not halt.is_set():
                await slots.acquire()
                if halt.is_set():
                    return
                after = cursor
                batch = await self._retry(lambda: read(after), "read", halt)
                if gather is not None and batch and _audits_only(batch):
                    batch = await self._gathered(gather, batch, halt)
                if halt.is_set():
                    return
                if not batch:
                    slots.release()
                    queue.put_nowait(_Item("idle" if self._tailing else "end"))
                    if not self._tailing:
                        return
                    continue
                queue.put_nowait(_Item("batch", batch, self._prepared(batch, halt)))
                cursor = batch[-1].position
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # handed to the consumer, which raises it in order
            queue.put_nowait(_Item("error", error=exc))

    async def _gathered(self, tail: Tail, batch: list[Event], halt: asyncio.Event) -> list[Event]:
        """`batch` (recall audits alone) and what follows it within `gather_s`: until another kind of
        event comes (kept, it ends the wait), `batch_size` events, or the time is up."""
        deadline = self.clock() + self.gather_s
        while len(batch) < self.batch_size and not halt.is_set():
            left_ms = int((deadline - self.clock()) * 1000)
            if left_ms <= 0:
                break
            after = batch[-1].position
            more = await self._retry(lambda: tail(after, min(self.block_ms, left_ms)), "read", halt)
            batch = batch + more
            if more and not _audits_only(more):
                break
        return batch

    @staticmethod
    async def _watch(stop: asyncio.Event, queue: asyncio.Queue[_Item]) -> None:
        """Wake the consumer waiting on the queue when `stop` is set (one task per run, not per item)."""
        await stop.wait()
        queue.put_nowait(_Item("stop"))

    @staticmethod
    async def _get(queue: asyncio.Queue[_Item], stop: asyncio.Event | None) -> _Item | None:
        if stop is not None and stop.is_set():
            return None
        item = await queue.get()
        return None if item.kind == "stop" else item

    def _skipped(self, batch: list[Event]) -> bool:
        """Whether the projector ignores every event of `batch` (then it is not applied)."""
        ignored = self._ignored
        return bool(ignored) and all(e.type in ignored for e in batch)

    def _prepared(self, batch: list[Event], stop: asyncio.Event | None) -> asyncio.Future[None]:
        if self._preparable and not self._skipped(batch):
            return asyncio.ensure_future(self._retry(lambda: self.projector.prepare(batch),  # type: ignore[attr-defined]
                                                     "prepare", stop))
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        done.set_result(None)
        return done

    async def _store_behind(self, stop: asyncio.Event | None) -> None:
        """Store the checkpoint moved past ignored events only (see the module doc)."""
        pos = self._behind
        if pos is None:
            return
        await self._retry(lambda: self.projector.advance(pos), "advance", stop)  # type: ignore[attr-defined]
        self._behind = None

    async def _apply(self, batch: list[Event], stop: asyncio.Event | None) -> None:
        started = time.perf_counter()
        skipped = self._skipped(batch)
        if not skipped:
            await self._retry(lambda: self.projector.apply(batch), "apply", stop)
        gens = (generations(self.projector, after_checkpoint(batch, self.checkpoint))  # type: ignore[arg-type]
                if self._generational else None)
        pos = positions.later(self.checkpoint, batch[-1].position)
        assert pos is not None
        self.checkpoint = pos
        self.events_applied += len(batch)
        if skipped:
            if self._behind is None:
                self._behind_since = self.clock()
            self._behind = pos
        else:
            self._behind = None   # the applied batch stored its own, later checkpoint
            self._dirty = True
        if self.publish:
            await self._retry(lambda: self.store.publish_checkpoint(self.name, pos, gens, epoch=self.epoch), "publish",
                              stop)
        if self.notify is not None:
            try:
                self.notify(self.name, pos)
            except Exception:  # noqa: BLE001 - a waiter bug must not stop the projection
                log.exception("projection.notify_failed", projector=self.name, position=pos)
        ms = (time.perf_counter() - started) * 1000
        if ms >= SLOW_BATCH_MS:
            log.info("projection.batch", projector=self.name, position=pos, events=len(batch), ms=round(ms, 1))
        else:
            log.debug("projection.batch", projector=self.name, position=pos, events=len(batch), skipped=skipped)
        if self._behind is not None and self.clock() - self._behind_since >= self.flush_every_s:
            await self._store_behind(stop)

    async def _maybe_maintain(self) -> None:
        if not self._maintainable:
            return
        if not (self._dirty and self.clock() - self._last_maintain >= self.maintain_every_s) and \
                not (self._upkeep is not None and self._upkeep()):
            return
        started = time.perf_counter()
        try:
            await self.projector.maintain()  # type: ignore[attr-defined]
        except Exception:  # noqa: BLE001 - upkeep failing must not stop the projection
            log.exception("projection.maintain_failed", projector=self.name)
        else:
            log.info("projection.maintained", projector=self.name, position=self.checkpoint,
                     ms=round((time.perf_counter() - started) * 1000, 1))
        self._last_maintain = self.clock()
        self._dirty = False

    async def _retry(self, fn: Callable[[], Awaitable[Any]], what: str, stop: asyncio.Event | None) -> Any:
        delay = 0.05
        while True:
            try:
                return await fn()
            except self.transient as exc:
                if stop is not None and stop.is_set():
                    raise
                log.warning("projection.transient_error", projector=self.name, step=what,
                            error=f"{type(exc).__name__}: {exc}", retry_in_s=delay)
                await asyncio.sleep(delay)
                delay = min(delay * 2, self.backoff_max_s)


def _audits_only(batch: list[Event]) -> bool:
    return all(e.type in RECALL_AUDIT for e in batch)
