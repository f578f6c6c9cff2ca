"""The embedding contract: the :class:`Embedder` protocol, its error, and the factory.

Every embedder is synchronous (``embed`` may block on CPU or network), returns
float32 ``(n, dim)`` arrays whose rows are L2-normalised, and exposes a stable
``model_id`` that is stored next to every vector it produced.

Providers, one per module: :mod:`projections.models.use_embedder` (the offline USE
model), :mod:`projections.models.http_embedder` (an OpenAI-compatible HTTP client)
and :mod:`projections.models.cached_embedder` (the cache wrapper every configured
embedder comes in).

Nothing here reads environment variables or creates module-level clients: the
caller injects all settings (see :func:`make_embedder`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np
import structlog

from projections.models.embedding_cache import EmbeddingCache

if TYPE_CHECKING:
    from projections.models.cached_embedder import CachedEmbedder

log = structlog.get_logger(__name__)

__all__ = ["Embedder", "EmbeddingError", "make_embedder", "normalise_rows"]


class EmbeddingError(Exception):
    """The embedding provider failed: bad HTTP status, malformed response or wrong dimension."""


@runtime_checkable
class Embedder(Protocol):
    """A synchronous text embedder producing L2-normalised float32 rows."""

    model_id: str

    @property
    def dim(self) -> int:
        """Vector dimension (a plain attribute satisfies it)."""
        ...

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed ``texts`` into a float32 ``(len(texts), dim)`` array of unit rows."""
        ...


def normalise_rows(vecs: np.ndarray) -> np.ndarray:
    """Return float32 copies of ``vecs`` rows scaled to unit L2 norm (every provider's last step).

    Raises :class:`EmbeddingError` if a row is all zeros."""
    out = np.asarray(vecs, dtype=np.float32)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    if out.size and not np.all(norms > 0):
        raise EmbeddingError("provider returned a zero vector")
    return (out / norms).astype(np.float32, copy=False)


def make_embedder(
    *,
    bge_endpoint: str | None,
    bge_api_key: str | None,
    bge_model: str | None,
    cache_path: str | None,
    threads: int = 1,
) -> CachedEmbedder:
    """Build the configured embedder: HTTP when ``bge_endpoint`` is set, else local USE.

    The result is always a :class:`~projections.models.cached_embedder.CachedEmbedder`; it has a
    persistent cache when ``cache_path`` is given.
    """
    # The providers import this module's contract, so the factory imports them when called.
    from projections.models.cached_embedder import CachedEmbedder
    from projections.models.http_embedder import HttpEmbedder
    from projections.models.use_embedder import LocalUSEEmbedder

    inner: Embedder
    if bge_endpoint:
        inner = HttpEmbedder(bge_endpoint, model=bge_model or "bge-m3", api_key=bge_api_key)
    else:
        inner = LocalUSEEmbedder(threads=threads)
    cache = EmbeddingCache(cache_path) if cache_path else None
    log.info("embedding.configured", model_id=inner.model_id, cached=cache is not None)
    return CachedEmbedder(inner, cache)
