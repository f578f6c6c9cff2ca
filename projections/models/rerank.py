"""The rerank contract (seed 2.4, recall step 3: re-score the coarse ANN candidates) and its factory.

A :class:`Reranker` returns one relevance score per document, in input order, higher = more
relevant. Two implementations, one module each:

- :class:`~projections.models.http_reranker.HttpReranker` — ``POST /v1/rerank`` in the
  bge-reranker-v2-m3 format (Gitee AI, Jina, TEI-compatible servers);
- :class:`~projections.models.rerank_local.LocalReranker` — the offline default
  (multilingual-e5-small plus lexical overlap).

Nothing here reads environment variables or creates module-level clients: the gateway builds
the configured provider with :func:`make_reranker` and closes it with ``await reranker.close()``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np
import structlog

if TYPE_CHECKING:
    from projections.models.e5 import E5Encoder

log = structlog.get_logger(__name__)

__all__ = ["RerankError", "Reranker", "make_reranker"]


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


def make_reranker(
    endpoint: str | None,
    api_key: str | None,
    model: str | None,
    *,
    timeout_s: float = 10.0,
    retries: int = 2,
    threads: int = 1,
    encoder: E5Encoder | None = None,
) -> Reranker:
    """Build the configured reranker: HTTP when ``endpoint`` is set, else the local one.

    The gateway passes ``RERANK_ENDPOINT``, ``RERANK_API_KEY`` and ``RERANK_MODEL`` from its settings.
    """
    # The HTTP provider imports this module's contract, so the factory imports the providers when called.
    from projections.models.http_reranker import DEFAULT_HTTP_MODEL, HttpReranker
    from projections.models.rerank_local import LocalReranker

    reranker: Reranker
    if endpoint:
        reranker = HttpReranker(endpoint, model=model or DEFAULT_HTTP_MODEL, api_key=api_key,
                                timeout_s=timeout_s, retries=retries)
    else:
        reranker = LocalReranker(threads=threads, encoder=encoder)
    log.info("rerank.configured", model_id=reranker.model_id)
    return reranker
