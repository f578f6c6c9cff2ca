"""The HTTP rerank provider: ``POST /v1/rerank`` in the bge-reranker-v2-m3 format (Gitee AI, Jina,
TEI-compatible servers).

Contract: :class:`projections.models.rerank.Reranker`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import orjson
import structlog

from projections.models.http_poster import JsonPoster, endpoint_url
from projections.models.rerank import RerankError

log = structlog.get_logger(__name__)

__all__ = ["DEFAULT_HTTP_MODEL", "HttpReranker"]

DEFAULT_HTTP_MODEL = "bge-reranker-v2-m3"


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
