"""The local embedding model in a child process, for the gateway's query embeddings.

Why a process: the USE model runs dozens of numpy calls per batch, each of which releases the GIL
and must take it back. In the gateway the event loop holds the GIL most of the time under load, so
each re-take waits up to Python's switch interval (5 ms): a batch that takes 13 ms alone took over
100 ms beside a busy loop, and every recall of the batch waited for it while the second core idled.
In a child process the model has its own interpreter; the gateway only sends the query strings
and reads back a (n, 512) float32 array through a pipe, with the GIL released while it waits.

`embed` is synchronous and blocking, like the in-process embedders (callers run it in a worker
thread); one call at a time (a lock); the child is started on first use (or `warm_up`) and again
after it dies; it exits by itself when the parent goes (its pipe closes).
"""

from __future__ import annotations

import multiprocessing
import threading
import time
from typing import Any

import numpy as np
import structlog

from projections.models.embedding import EmbeddingError
from projections.models.use_embedder import LocalUSEEmbedder

log = structlog.get_logger(__name__)

START_TIMEOUT_S = 120.0
CALL_TIMEOUT_S = 60.0


def _serve(conn: Any, threads: int) -> None:
    """Child: load the model, then answer each list of texts with ("ok", array) or ("error", message);
    None (or a closed pipe) ends it."""
    model = LocalUSEEmbedder(threads=threads)  # it limits its BLAS threads per call
    try:
        model.warm_up()
        conn.send(("ready", model.model_id, model.dim))
    except Exception as exc:  # noqa: BLE001 - reported to the parent, which raises it
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
        return
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):  # the parent closed the pipe or died
            return
        if request is None:
            return
        try:
            conn.send(("ok", model.embed(request)))
        except Exception as exc:  # noqa: BLE001 - the parent raises it for this call only
            conn.send(("error", f"{type(exc).__name__}: {exc}"))


class ProcessEmbedder:
    """The local USE embedder behind a pipe to a child process (see the module doc)."""

    model_id: str = LocalUSEEmbedder.model_id
    dim: int = LocalUSEEmbedder.dim

    def __init__(self, threads: int = 1) -> None:
        self.threads = threads
        self._lock = threading.Lock()
        self._proc: Any = None
        self._conn: Any = None
        self.starts = 0

    def warm_up(self) -> None:
        with self._lock:
            self._ensure()

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            conn = self._ensure()
            try:
                conn.send(list(texts))
                if not conn.poll(CALL_TIMEOUT_S):
                    raise EmbeddingError(f"embedding process gave no answer in {CALL_TIMEOUT_S:.0f} s")
                status, value = conn.recv()
            except (EOFError, OSError, EmbeddingError) as exc:
                self._stop()  # the next call starts a fresh one
                raise EmbeddingError(f"embedding process failed: {exc}") from exc
        if status != "ok":
            raise EmbeddingError(str(value))
        vecs = np.asarray(value, dtype=np.float32)
        if vecs.shape != (len(texts), self.dim):
            raise EmbeddingError(f"embedding process returned shape {vecs.shape}, expected ({len(texts)}, {self.dim})")
        return vecs

    def _ensure(self) -> Any:
        if self._proc is not None and self._proc.is_alive():
            return self._conn
        self._stop()
        started = time.perf_counter()
        ctx = multiprocessing.get_context("spawn")  # never fork a process that holds threads and sockets
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_serve, args=(child, self.threads), name="zhiyi-query-embedder", daemon=True)
        proc.start()
        child.close()
        try:
            if not parent.poll(START_TIMEOUT_S):
                raise EmbeddingError(f"embedding process not ready in {START_TIMEOUT_S:.0f} s")
            hello = parent.recv()
        except (EOFError, OSError) as exc:
            proc.kill()
            raise EmbeddingError(f"embedding process exited while starting: {exc}") from exc
        except EmbeddingError:
            proc.kill()
            raise
        if hello[0] != "ready":
            proc.join(5)
            raise EmbeddingError(f"embedding process could not load the model: {hello[1]}")
        self._proc, self._conn = proc, parent
        self.starts += 1
        log.info("embedding.process_started", pid=proc.pid, seconds=round(time.perf_counter() - started, 3))
        return parent

    def _stop(self) -> None:
        proc, conn = self._proc, self._conn
        self._proc = self._conn = None
        if conn is not None:
            try:
                conn.send(None)
            except (OSError, ValueError):
                pass
            conn.close()
        if proc is not None:
            proc.join(2)
            if proc.is_alive():
                proc.kill()
                proc.join(2)

    def close(self) -> None:
        with self._lock:
            self._stop()
