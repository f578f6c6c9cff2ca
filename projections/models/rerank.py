"""Rerank providers (seed 2.4, recall step 3): re-score the coarse ANN candidates.

A :class:`Reranker` returns one relevance score per document, in input order, higher = more
relevant. Two implementations:

- :class:`HttpReranker` — ``POST /v1/rerank`` in the bge-reranker-v2-m3 format (Gitee AI,
  Jina, TEI-compatible servers);
- :class:`~projections.models.rerank_local.LocalReranker` — the offline default (multilingual-e5-small
  plus lexical overlap).

Nothing here reads environment variables or creates module-level clients: the gateway builds
the configured provider with :func:`make_reranker` and closes it with ``await reranker.close()``.
"""

from __future__ import annotations

import math
from typing import Any, Protocol, runtime_checkable

import numpy as np
import orjson
import structlog

from projections.models.http_poster import JsonPoster, endpoint_url
from projections.models.rerank_local import LocalReranker

log = structlog.get_logger(__name__)

__all__ = ["HttpReranker", "LocalReranker", "RerankError", "Reranker", "make_reranker"]

DEFAULT_HTTP_MODEL = "bge-reranker-v2-m3"


class RerankError(Exception):
    """The rerank provider failed: bad HTTP status, malformed response, or retries exhausted."""


@runtime_checkable
class Reranker(Protocol):
    """Scores documents against a query; one float per document, in input order."""

    model_id: str

    async def rerank(
        self, query: str, documents: list[str], *, passage_vectors: np.ndarray | None = None
    ) -> list[float]:
        """Score ``documents`` for ``query``. ``passage_vectors`` is a hint only some providers use."""
        ...

    async def close(self) -> None:
        """Release network sessions or other resources."""
        ...


def _rerank_url(endpoint: str) -> str:
    return endpoint_url(endpoint, "rerank")



class HttpReranker(JsonPoster):
    """Client for ``POST {endpoint}/v1/rerank`` speaking the bge-reranker-v2-m3 wire format.

    Request: ``{"model", "query", "documents", "top_n": len(documents), "return_documents": false}``
    with ``Authorization: Bearer <key>``. Response: ``{"results": [{"index", "relevance_score",
    "document": {"text"}}], "usage"}``, in any order; ``document`` may also be a plain string or
    absent (it is not used). Documents missing from ``results`` get a score 1.0 below the lowest
    returned one. Connection errors, timeouts, 5xx and 429 are retried with backoff; any other
    4xx or a malformed body raises :class:`RerankError` at once.

    The aiohttp session is created on first use (inside the running loop) and closed by
    :meth:`close`. Proxy settings from the environment are ignored (aiohttp's default).
    """

    error_cls = RerankError
    what = "rerank"

    def __init__(
        self,
        endpoint: str,
        model: str = DEFAULT_HTTP_MODEL,
        api_key: str | None = None,
        timeout_s: float = 10.0,
        retries: int = 2,
    ) -> None:
        super().__init__(_rerank_url(endpoint), api_key, timeout_s, retries)
        self.model = model
        self.model_id = f"http:{model}"

    async def rerank(
        self, query: str, documents: list[str], *, passage_vectors: np.ndarray | None = None
    ) -> list[float]:
        """Score ``documents`` remotely; ``passage_vectors`` is ignored (the server reads the text)."""
        if not documents:
            return []
        body = orjson.dumps({
            "model": self.model,
            "query": query,
            "documents": list(documents),
            "top_n": len(documents),
            "return_documents": False,
        })
        raw = await self.post_json(body)
        return self._parse(raw, len(documents))

    def _parse(self, raw: bytes, n: int) -> list[float]:
        try:
            results = orjson.loads(raw)["results"]
            if not isinstance(results, list):
                raise ValueError(f"results is a {type(results).__name__}, not a list")
            scores: dict[int, float] = {}
            for item in results:
                index, score = _result_item(item)
                if not 0 <= index < n:
                    raise ValueError(f"index {index} out of range for {n} documents")
                if index in scores:
                    raise ValueError(f"index {index} appears twice")
                scores[index] = score
        except Exception as exc:
            raise RerankError(f"malformed rerank response from {self.url}: {exc}") from exc
        if len(scores) < n:
            log.warning("rerank.http_missing_results", url=self.url, documents=n, results=len(scores))
        missing = min(scores.values(), default=0.0) - 1.0
        return [scores.get(i, missing) for i in range(n)]


def _result_item(item: Any) -> tuple[int, float]:
    """``(index, score)`` of one result; accepts ``relevance_score`` or (TEI-style) ``score``."""
    if not isinstance(item, dict):
        raise ValueError(f"result is a {type(item).__name__}, not an object")
    index = item["index"]
    score = item.get("relevance_score", item.get("score"))
    if isinstance(index, bool) or not isinstance(index, int):
        raise ValueError(f"index {index!r} is not an integer")
    if isinstance(score, bool) or not isinstance(score, (int, float)) or not math.isfinite(score):
        raise ValueError(f"relevance_score {score!r} is not a finite number")
    return index, float(score)


def make_reranker(
    endpoint: str | None,
    api_key: str | None,
    model: str | None,
    *,
    timeout_s: float = 10.0,
    retries: int = 2,
    threads: int = 1,
) -> Reranker:
    """Build the configured reranker: HTTP when ``endpoint`` is set, else the local one.

    The gateway passes ``RERANK_ENDPOINT``, ``RERANK_API_KEY`` and ``RERANK_MODEL`` from its settings.
    """
    reranker: Reranker
    if endpoint:
        reranker = HttpReranker(endpoint, model=model or DEFAULT_HTTP_MODEL, api_key=api_key,
                                timeout_s=timeout_s, retries=retries)
    else:
        reranker = LocalReranker(threads=threads)
    log.info("rerank.configured", model_id=reranker.model_id)
    return reranker
