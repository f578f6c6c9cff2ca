"""An :class:`~projections.models.embedding.Embedder` in front of the persistent embedding cache."""

from __future__ import annotations

import threading

import numpy as np

from projections.models.embedding import Embedder, EmbeddingError
from projections.models.embedding_cache import EmbeddingCache, content_sha

__all__ = ["CachedEmbedder"]


class CachedEmbedder:
    """Wraps an :class:`Embedder` with an optional persistent :class:`EmbeddingCache`.

    Counters (over the distinct texts of each call): ``hits`` are texts served
    from the cache, ``misses`` are texts that had to be embedded. Without a
    cache every distinct text is a miss; duplicates within a call are still
    embedded only once.
    """

    def __init__(self, inner: Embedder, cache: EmbeddingCache | None) -> None:
        self.inner = inner
        self.cache = cache
        self.hits = 0
        self.misses = 0
        self._counter_lock = threading.Lock()

    @property
    def model_id(self) -> str:
        return self.inner.model_id

    @property
    def dim(self) -> int:
        return self.inner.dim

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed ``texts``, reusing cached vectors; returns rows in input order."""
        if not texts:
            return self.inner.embed([])
        shas = [content_sha(t) for t in texts]
        first: dict[str, str] = {}  # sha -> text, first occurrence, insertion-ordered
        for sha, text in zip(shas, texts):
            first.setdefault(sha, text)
        model_id = self.inner.model_id
        found = self.cache.get_many(model_id, list(first)) if self.cache is not None else {}
        missing = [sha for sha in first if sha not in found]
        if missing:
            vecs = np.asarray(self.inner.embed([first[s] for s in missing]), dtype=np.float32)
            if vecs.ndim != 2 or vecs.shape[0] != len(missing):
                raise EmbeddingError(
                    f"{model_id} returned shape {vecs.shape} for {len(missing)} texts"
                )
            new = dict(zip(missing, vecs))
            if self.cache is not None:
                self.cache.put_many(model_id, new)
            found.update(new)
        with self._counter_lock:
            self.hits += len(first) - len(missing)
            self.misses += len(missing)
        return np.stack([found[s] for s in shas]).astype(np.float32, copy=False)

    def warm_up(self) -> None:
        """Load a local model ahead of the first request (HTTP providers need nothing)."""
        warm = getattr(self.inner, "warm_up", None)
        if warm is not None:
            warm()

    def close(self) -> None:
        """Close the cache, if any."""
        if self.cache is not None:
            self.cache.close()
