"""A deterministic, dependency-free embedder: sha256-seeded unit vectors.

Not semantic (unrelated texts are near-orthogonal, equal texts identical): for property
tests, benchmarks of the storage path, and development without a model. Same protocol as
`projections.models.embedding.Embedder`.
"""

from __future__ import annotations

import hashlib

import numpy as np


class HashEmbedder:
    def __init__(self, dim: int = 32, model_id: str | None = None) -> None:
        self.dim = dim
        self.model_id = model_id or f"hash-sha256-{dim}"
        self.calls = 0
        self.texts = 0

    def vector(self, text: str) -> np.ndarray:
        seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
        v = np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)
        return v / np.linalg.norm(v)

    def embed(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        self.texts += len(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self.vector(t) for t in texts]).astype(np.float32)
