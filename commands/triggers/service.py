"""The trigger service (seed 6.4): evaluates the eight triggers at the scheduler clock's now, fires
the due ones in urgency order, and records every outcome as an event.

- A fired trigger's action ran: `trigger.fired` (its cooldown starts at `at_ms`; its marks say what
  the next evaluation counts from). An action that raised: `trigger.failed` (the cooldown starts all
  the same); the third failure in a row also pauses it (`trigger.paused` by `system`) and raises a
  `notice.raised`. A transient Redis error is not the action's failure: it propagates (the loop
  backs off and tries again).
- `pause` / `resume` are the kill-switch (`POST /api/v1/admin/triggers/{name}/pause|resume`).
- The state lives in the consolidation projection (`projections.consolidation`); each evaluation
  first waits until it has reached the end of the log, so a trigger never fires twice on a stale view.
- `run` evaluates every `interval_s` (`ZHIYI_TICK_INTERVAL_S`); `run_due` once, now.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

import structlog

from commands.triggers.specs import BY_NAME, SPECS, Evaluation, Inputs, evaluate_all
from events.catalogue import NoticeRaised, TriggerFailed, TriggerFired, TriggerPaused, TriggerResumed, new_event
from events.clock import Clock
from events.hlc import iso_from_ms
from events.redis.client import RETRY_BACKOFF_MAX_S, TRANSIENT_ERRORS
from events.redis.leases import lease
from events.vocabulary import SHARED_NAMESPACE

log = structlog.get_logger(__name__)

FAILURES_TO_PAUSE = 3
#: How long one round may hold the lease; a crashed instance's lease expires after it.
LEASE_MS = 30 * 60 * 1000
READS = ("consolidation",)

#: An action: (result, marks) of one firing.
Action = Callable[[Evaluation, Inputs], Awaitable[tuple[dict[str, Any], dict[str, Any]]]]
#: What a trigger's condition counts beyond the projection (e.g. a sweep's pending writes).
Probe = Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]


class UnknownTrigger(LookupError):
    def __init__(self, name: str) -> None:
        super().__init__(f"no trigger named {name!r}; known: {', '.join(s.name for s in SPECS)}")
        self.name = name


class TriggerLag(RuntimeError):
    """The consolidation projection did not reach the end of the log in time: nothing was decided."""


@dataclass
class TriggerService:
    store: Any                      # events.redis.store.EventStore
    reader: Any                     # projections.consolidation.reader.ConsolidationReader
    waiter: Any                     # projections.core.waiter.CheckpointWaiter
    clock: Clock
    actions: dict[str, Action] = field(default_factory=dict)
    disabled: dict[str, str] = field(default_factory=dict)     # name -> why it cannot run in this deployment
    probes: list[Probe] = field(default_factory=list)          # each adds Inputs fields (e.g. writes, queue)
    wait_s: float = 30.0
    _origin_ms: int = field(default=0, init=False, repr=False)
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock, init=False, repr=False)

    async def _settle(self) -> None:
        last = await self.store.last_position()
        if last and not await self.waiter.wait(list(READS), last, self.wait_s):
            raise TriggerLag(f"projections {list(READS)} did not reach {last}")

    async def _origin(self) -> int:
        if not self._origin_ms:
            first = await self.store.read(None, count=1)
            self._origin_ms = int(first[0].position.split("-")[0]) if first else 0
        return self._origin_ms

    async def inputs(self) -> Inputs:
        await self._settle()
        now = self.clock.now_ms()
        st = await self.reader.state()
        extra: dict[str, Any] = {}
        writes: dict[str, int] = {}
        for probe in self.probes:
            found = await probe(st["triggers"])
            writes.update(found.pop("writes", {}))
            extra.update(found)
        disabled = {name: why for name, why in self.disabled.items()}
        return Inputs(now_ms=now, origin_ms=await self._origin() or now, state=st["triggers"],
                      distilled=st["distilled"], writes=writes, disabled=disabled, **extra)

    async def entries(self) -> list[dict[str, Any]]:
        """Every trigger, urgency descending (`GET /api/v1/triggers`)."""
        inputs = await self.inputs()
        return [self._shaped(e, inputs) for e in evaluate_all(inputs)]

    @staticmethod
    def _shaped(e: Evaluation, inputs: Inputs) -> dict[str, Any]:
        spec, st = BY_NAME[e.name], inputs.state.get(e.name) or {}
        last = int(st.get("last_fired_ms") or 0)
        return {"name": e.name, "condition": spec.condition, "cooldown_s": spec.cooldown_s, "urgency": e.urgency,
                "last_fired_at": iso_from_ms(last) if last else None, "paused": bool(st.get("paused")),
                "failures": int(st.get("failures") or 0), "action": spec.action, "holds": e.holds, "due": e.due,
                "reason": e.reason, "disabled": e.disabled or None,
                "cooling_until": iso_from_ms(e.cooling_until_ms) if e.cooling_until_ms else None,
                "paused_reason": st.get("paused_reason") or None, "last_error": st.get("last_error") or None,
                "fired": int(st.get("fired") or 0)}

    async def run_due(self) -> list[dict[str, Any]]:
        """Fire every due trigger now, most urgent first; what each did. One instance at a time (a
        Redis lease): a gateway that finds another one firing fires nothing this round."""
        async with self._lock, lease(self.store.redis, "triggers", LEASE_MS) as held:
            if not held:
                log.info("triggers.skipped", reason="another instance holds the lease")
                return []
            inputs = await self.inputs()
            out = []
            for e in evaluate_all(inputs):
                if e.due and e.name in self.actions:
                    out.append(await self._fire(e, inputs))
            return out

    async def _fire(self, e: Evaluation, inputs: Inputs) -> dict[str, Any]:
        marks: dict[str, Any] = {"distilled": inputs.distilled}
        try:
            result, more = await self.actions[e.name](e, inputs)
        except TRANSIENT_ERRORS:
            raise
        except Exception as exc:  # noqa: BLE001 - an action's failure is recorded, counted, and may pause it
            return await self._failed(e, inputs, exc)
        marks.update(more)
        event = TriggerFired(e.name, inputs.now_ms, e.urgency, e.reason, marks, result)
        res = await self.store.append([new_event(event, ns=SHARED_NAMESPACE, agent="system", by="scheduler")])
        log.info("trigger.fired", trigger=e.name, urgency=e.urgency, reason=e.reason, result=result,
                 position=res.position)
        return {"name": e.name, "status": "fired", "result": result, "position": res.position}

    async def _failed(self, e: Evaluation, inputs: Inputs, exc: Exception) -> dict[str, Any]:
        failures = int((inputs.state.get(e.name) or {}).get("failures") or 0) + 1
        error = f"{type(exc).__name__}: {exc}"[:500]
        events = [new_event(TriggerFailed(e.name, inputs.now_ms, error, failures), ns=SHARED_NAMESPACE,
                            agent="system", by="scheduler")]
        if failures >= FAILURES_TO_PAUSE:
            why = f"{failures} failures in a row; last: {error}"
            events += [new_event(TriggerPaused(e.name, why), ns=SHARED_NAMESPACE, agent="system", by="scheduler"),
                       new_event(NoticeRaised("trigger_disabled", e.name, f"trigger {e.name} paused: {why}"),
                                 ns=SHARED_NAMESPACE, agent="system", by="scheduler")]
        res = await self.store.append(events)
        log.warning("trigger.failed", trigger=e.name, failures=failures, error=error, paused=failures >= 3,
                    position=res.position)
        return {"name": e.name, "status": "failed", "error": error, "failures": failures, "position": res.position}

    async def set_paused(self, name: str, paused: bool, *, reason: str = "", by: str = "admin") -> dict[str, Any]:
        """Pause or resume `name`; appends only when that changes it. The trigger's entry after it."""
        if name not in BY_NAME:
            raise UnknownTrigger(name)
        async with self._lock:
            await self._settle()
            state = (await self.reader.state())["triggers"].get(name) or {}
            position = ""
            if bool(state.get("paused")) != paused:
                payload = TriggerPaused(name, reason or f"paused by {by}") if paused else TriggerResumed(name)
                res = await self.store.append([new_event(payload, ns=SHARED_NAMESPACE, agent="system", by=by)])
                position = res.position
                log.info("trigger.paused" if paused else "trigger.resumed", trigger=name, by=by, position=position)
            return {"name": name, "paused": paused, "changed": bool(position), "position": position}

    async def run(self, stop: asyncio.Event, interval_s: float) -> None:
        """Evaluate every `interval_s` until `stop`. After a transient Redis error it tries again after a
        back-off (up to 2 s); other errors are logged (the next evaluation tries again)."""
        wait, delay = interval_s, 0.1
        while not stop.is_set():
            try:
                await asyncio.wait_for(stop.wait(), wait)
                return
            except asyncio.TimeoutError:
                pass
            try:
                await self.run_due()
            except TRANSIENT_ERRORS as exc:
                log.warning("triggers.redis_error", error=str(exc), retry_in_s=delay)
                wait, delay = delay, min(delay * 2, RETRY_BACKOFF_MAX_S)
                continue
            except Exception:  # noqa: BLE001 - a failed evaluation must not stop the schedule
                log.exception("triggers.run_failed")
            wait, delay = interval_s, 0.1
