"""The evaluation framework's write side (seed 6.1): golden sets and evaluation runs as events.

- `parse_run` / `parse_generate`: validate request bodies (errors name the field).
- `EvalService.generate`: sample memories (deterministically, seeded by the request or by the log
  position), build rule-based queries, append `eval.golden_set_created`.
- `EvalService.run`: resolve the queries (explicit, a golden set by id, or the latest golden set),
  run them through the recall service (`projections.queries.evaluation.metrics.evaluate`: the same
  `RecallService` as `/api/v1/recall`, never audited), append `eval.completed`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, ClassVar

import structlog

from commands.access import ScopeOf
from commands.error_codes import ErrorCode
from commands.errors import Forbidden, InvalidCommand, NotFound
from commands.model import Limits
from commands.parsing import (
    AGENT_ID_RE, MEMORY_ID_RE, NAMESPACE_RE, is_text, opt_int, opt_str, present, require_object, str_list,
)
from events import positions
from events.catalogue import EvalCompleted, GoldenSetCreated, new_event
from events.redis.store import EventStore
from projections.queries.evaluation import golden_sample as golden
from projections.queries.evaluation import golden_rules
from projections.queries.evaluation.eval_log import GoldenSet, find_golden_set
from projections.queries.evaluation.metrics import DEFAULT_TOP_K, MAX_QUERIES, EvalQuery, EvalReport, Recaller, evaluate
from projections.memories.reader import MemoriesReader

log = structlog.get_logger(__name__)

MAX_EXPECTED = 100
DIFFICULTIES = ("easy", "medium", "hard")
MAX_GENERATED = 200
DETAILS_IN_EVENT = 50          # per-query details go into eval.completed only for small runs
GOLDEN_ID_RE = NAMESPACE_RE    # letters, digits, _.- (ids are "gs-<hex>")


@dataclass(frozen=True, slots=True)
class RunEval:
    queries: tuple[EvalQuery, ...] | None = None   # None: a golden set
    golden_set_id: str | None = None               # None with no queries: the latest golden set
    top_k: int = DEFAULT_TOP_K
    namespace: str | None = None


@dataclass(frozen=True, slots=True)
class GenerateGoldenSet:
    n: int = golden_rules.DEFAULT_QUERIES
    seed: int | None = None
    namespace: str | None = None


@dataclass(frozen=True, slots=True)
class EvalRun:
    report: EvalReport
    golden_set_id: str | None
    position: str
    queries: int


def _fail(field: str, message: str) -> InvalidCommand:
    return InvalidCommand(f"{field}: {message}", {"field": field})


def _parse_query(raw: Any, i: int, limits: Limits) -> EvalQuery:
    where = f"queries[{i}]"
    if not isinstance(raw, dict):
        raise _fail(where, "must be an object {query, expected_ids, tag?, agent_id?}")
    try:
        query = opt_str(raw, "query", max_chars=limits.max_query_chars)
        if query is None or not is_text(query):
            raise _fail("query", "is required and must not be empty")
        if not isinstance(raw.get("expected_ids"), list) or not raw["expected_ids"]:
            raise _fail("expected_ids", "must be a non-empty list of memory ids")
        expected = str_list(raw, "expected_ids", max_items=MAX_EXPECTED, max_chars=128, pattern=MEMORY_ID_RE)
        tag = opt_str(raw, "tag", max_chars=64, default="") or ""
        agent = opt_str(raw, "agent_id", max_chars=64, pattern=AGENT_ID_RE, default="") or ""
        opt_str(raw, "difficulty", max_chars=16, choices=DIFFICULTIES)   # documented, informative only
    except InvalidCommand as exc:
        raise InvalidCommand(f"{where}.{exc.message}", {**exc.details, "index": i}) from None
    return EvalQuery(query, expected, tag, agent)


def parse_run(body: Any, limits: Limits) -> RunEval:
    """{queries: [...]} | {golden_set_id} | {} (the latest golden set); top_k? (1-100, 5); namespace?"""
    body = require_object(body)
    top_k = opt_int(body, "top_k", minimum=1, maximum=limits.max_top_k, default=DEFAULT_TOP_K)
    namespace = opt_str(body, "namespace", max_chars=64, pattern=NAMESPACE_RE)
    golden_id = opt_str(body, "golden_set_id", max_chars=64, pattern=GOLDEN_ID_RE)
    raw = present(body, "queries")
    if raw is None:
        return RunEval(None, golden_id, top_k or DEFAULT_TOP_K, namespace)
    if golden_id is not None:
        raise _fail("queries", "give either queries or golden_set_id, not both")
    if not isinstance(raw, list) or not raw:
        raise _fail("queries", "must be a non-empty list")
    if len(raw) > MAX_QUERIES:
        raise _fail("queries", f"must have at most {MAX_QUERIES} items")
    return RunEval(tuple(_parse_query(q, i, limits) for i, q in enumerate(raw)), None, top_k or DEFAULT_TOP_K,
                   namespace)


def parse_generate(body: Any) -> GenerateGoldenSet:
    body = require_object(body)
    n = opt_int(body, "n", minimum=1, maximum=MAX_GENERATED, default=golden_rules.DEFAULT_QUERIES)
    seed = opt_int(body, "seed", minimum=0, maximum=2**63 - 1)
    namespace = opt_str(body, "namespace", max_chars=64, pattern=NAMESPACE_RE)
    return GenerateGoldenSet(n or golden_rules.DEFAULT_QUERIES, seed, namespace)


class EvalService:
    reads: ClassVar[tuple[str, ...]] = ("memories",)   # projections a run or a generation waits for

    def __init__(self, store: EventStore, recaller: Recaller | None, memories: MemoriesReader) -> None:
        self.store = store
        self.recaller = recaller
        self.memories = memories

    async def generate(self, cmd: GenerateGoldenSet) -> GoldenSet:
        """Rule-based golden set from the stored memories, recorded as `eval.golden_set_created`."""
        seed = cmd.seed
        if seed is None:
            last = await self.store.last_position()
            seed = positions.timestamp_ms(last) if last else 0
        memories = await asyncio.to_thread(golden.sample_memories, self.memories, seed,
                                           namespaces=[cmd.namespace] if cmd.namespace else None)
        queries = golden_rules.generate(memories, cmd.n, seed)
        if not queries:
            raise NotFound("there are no memories to build a golden set from",
                           {"namespace": cmd.namespace}, code=ErrorCode.NO_MEMORIES)
        gid = golden_rules.golden_set_id(seed, queries)
        payload = GoldenSetCreated(gid, tuple(q.to_json() for q in queries), "rules", seed, cmd.namespace or "")
        res = await self.store.append([new_event(payload, ns=cmd.namespace or "shared", agent="admin", by="admin")])
        log.info("eval.golden_set_created", golden_set_id=gid, queries=len(queries), position=res.position)
        return GoldenSet(gid, queries, res.position, "rules", seed, cmd.namespace or "")

    async def _queries(self, cmd: RunEval, only_agent: str | None) -> tuple[list[EvalQuery], str | None]:
        if cmd.queries is not None:
            if only_agent is not None:
                for q in cmd.queries:
                    if q.agent_id not in ("", only_agent):
                        raise Forbidden("an agent key may only evaluate its own scope",
                                        {"agent_id": q.agent_id})
            return list(cmd.queries), None
        found = await find_golden_set(self.store, cmd.golden_set_id)
        if found is None:
            if cmd.golden_set_id is not None:
                raise NotFound(f"golden set {cmd.golden_set_id} not found", {"golden_set_id": cmd.golden_set_id})
            raise NotFound("no golden set yet: POST /api/v1/eval/generate first, or give queries",
                           code=ErrorCode.NO_GOLDEN_SET)
        queries = [q for q in found.queries if only_agent is None or q.agent_id in ("", only_agent)]
        if not queries:
            raise InvalidCommand(f"golden set {found.golden_set_id} has no queries for agent {only_agent}",
                                 {"golden_set_id": found.golden_set_id})
        return queries, found.golden_set_id

    async def run(self, cmd: RunEval, scope_of: ScopeOf, *, agent: str = "admin",
                  only_agent: str | None = None) -> EvalRun:
        """Evaluate and append `eval.completed` (as `agent`; an agent key passes itself as `only_agent`)."""
        queries, golden_id = await self._queries(cmd, only_agent)
        scopes = {a: await scope_of(a) for a in dict.fromkeys(q.agent_id for q in queries)}
        if self.recaller is None:
            raise RuntimeError("EvalService.run needs a recall service")
        report = await evaluate(self.recaller, queries, scopes, cmd.top_k)
        details = report.details()
        payload = EvalCompleted(metrics=report.metrics, queries=len(queries), top_k=cmd.top_k,
                                golden_set_id=golden_id or "", namespace=cmd.namespace or "",
                                details=tuple(details) if len(details) <= DETAILS_IN_EVENT else ())
        by = "admin" if only_agent is None else ""
        res = await self.store.append([new_event(payload, ns=cmd.namespace or "shared", agent=agent, by=by)])
        log.info("eval.completed", golden_set_id=golden_id, queries=len(queries), position=res.position,
                 recall_at_5=report.metrics["recall_at_5"])
        return EvalRun(report, golden_id, res.position, len(queries))
