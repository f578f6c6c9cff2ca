"""Persistent embedding cache keyed by (model id, sha256 of the content).

The cache lives outside every projection directory so that rebuilding a
projection (replaying the event log from position zero) does not have to embed
the same texts again: a replay becomes a sequence of cache lookups.

Vectors are stored as little-endian float32 blobs in a single SQLite table::

    embeddings(model TEXT, sha TEXT, vec BLOB, PRIMARY KEY (model, sha)) WITHOUT ROWID

Entries are immutable: the same (model, content) always maps to the same
vector, so writes use ``INSERT OR IGNORE`` and nothing is ever updated.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import structlog

log = structlog.get_logger(__name__)

__all__ = ["EmbeddingCache", "content_sha"]

# Host parameters per ``IN (...)`` lookup. Old SQLite builds cap a statement at
# 999 variables; 500 keeps every statement well below that.
_CHUNK = 500

_VEC_DTYPE = np.dtype("<f4")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS embeddings (
    model TEXT NOT NULL,
    sha   TEXT NOT NULL,
    vec   BLOB NOT NULL,
    PRIMARY KEY (model, sha)
) WITHOUT ROWID
"""


def content_sha(text: str) -> str:
    """Return the sha256 hex digest of ``text`` encoded as UTF-8."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class EmbeddingCache:
    """SQLite-backed cache of embedding vectors.

    One connection is shared by all threads (``check_same_thread=False``) and
    every use of it is serialised by a lock, so the cache may be created on the
    event-loop thread and used from a worker thread (``asyncio.to_thread``).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        # isolation_level=None: autocommit; transactions are opened explicitly.
        self._conn: sqlite3.Connection | None = sqlite3.connect(
            self.path, check_same_thread=False, isolation_level=None, timeout=30.0
        )
        # 2 KiB+ vector blobs in a WITHOUT ROWID b-tree: bigger pages halve the
        # overflow-page chasing (about 2x faster reads and writes). Only takes
        # effect for a new file, so it must precede WAL mode and the schema.
        self._conn.execute("PRAGMA page_size=16384")
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute(_SCHEMA)
        log.debug("embedding_cache.open", path=str(self.path))

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise RuntimeError(f"embedding cache {self.path} is closed")
        return self._conn

    def get_many(self, model_id: str, shas: Sequence[str]) -> dict[str, np.ndarray]:
        """Return ``{sha: vector}`` for the given shas that are cached for ``model_id``.

        Missing shas are simply absent from the result. Vectors are writable
        float32 1-d arrays. One query is issued per chunk of at most 500 shas.
        """
        unique = list(dict.fromkeys(shas))
        found: dict[str, np.ndarray] = {}
        if not unique:
            return found
        with self._lock:
            conn = self._connection()
            for start in range(0, len(unique), _CHUNK):
                chunk = unique[start : start + _CHUNK]
                marks = ",".join("?" * len(chunk))
                rows = conn.execute(
                    f"SELECT sha, vec FROM embeddings WHERE model = ? AND sha IN ({marks})",
                    (model_id, *chunk),
                ).fetchall()
                for sha, blob in rows:
                    found[sha] = np.frombuffer(blob, dtype=_VEC_DTYPE).astype(np.float32)
        return found

    def put_many(self, model_id: str, items: Mapping[str, np.ndarray]) -> None:
        """Store ``{sha: vector}`` for ``model_id`` in one transaction.

        Already-cached entries are left untouched (``INSERT OR IGNORE``).
        """
        if not items:
            return
        rows = [
            (model_id, sha, np.ascontiguousarray(vec, dtype=_VEC_DTYPE).reshape(-1).tobytes())
            for sha, vec in items.items()
        ]
        with self._lock:
            conn = self._connection()
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.executemany(
                    "INSERT OR IGNORE INTO embeddings (model, sha, vec) VALUES (?, ?, ?)", rows
                )
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def count(self, model_id: str | None = None) -> int:
        """Number of cached vectors, for one model or for all of them."""
        with self._lock:
            conn = self._connection()
            if model_id is None:
                row = conn.execute("SELECT count(*) FROM embeddings").fetchone()
            else:
                row = conn.execute(
                    "SELECT count(*) FROM embeddings WHERE model = ?", (model_id,)
                ).fetchone()
        return int(row[0])

    def close(self) -> None:
        """Close the database connection. Idempotent."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __enter__(self) -> EmbeddingCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
