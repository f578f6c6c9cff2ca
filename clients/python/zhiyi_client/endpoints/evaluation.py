"""Retrieval evaluation: golden sets, runs, history."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..calls import Call, fields, params
from ..models import Response
from ._build import action, get


def eval_generate(*, n: int | None = None, seed: int | None = None, namespace: str | None = None,
                  after: str | None = None) -> Call[Response]:
    """Build a golden set of queries from the stored memories (admin; `POST /api/v1/eval/generate`)."""
    return action("/api/v1/eval/generate", Response.from_json, fields(n=n, seed=seed, namespace=namespace),
                  after=after, waits=True)


def eval_run(*, queries: Sequence[Mapping[str, Any]] | None = None, golden_set_id: str | None = None,
             top_k: int | None = None, namespace: str | None = None, after: str | None = None) -> Call[Response]:
    """Run golden queries (given, a golden set, or the latest one) and score recall@5, MRR, ...
    (`POST /api/v1/eval/run`)."""
    body = fields(queries=[dict(q) for q in queries] if queries is not None else None,
                  golden_set_id=golden_set_id, top_k=top_k, namespace=namespace)
    return action("/api/v1/eval/run", Response.from_json, body, after=after, waits=True)


def eval_history(*, limit: int | None = None) -> Call[Response]:
    """Past evaluation runs, newest first, and whether the last one regressed."""
    return get("/api/v1/eval/history", Response.from_json, params(limit=limit), waits=False)
