"""The HTTP embedding provider: any OpenAI-compatible ``POST /v1/embeddings`` endpoint.

Contract: :class:`projections.models.embedding.Embedder`.
"""

from __future__ import annotations

import http.client
import threading
import time
import urllib.error
import urllib.request

import numpy as np
import orjson
import structlog

from projections.models.embedding import EmbeddingError, normalise_rows
from projections.models.http_poster import Retryable, endpoint_url, error_message

log = structlog.get_logger(__name__)

__all__ = ["HttpEmbedder"]


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
        return normalise_rows(vecs)
