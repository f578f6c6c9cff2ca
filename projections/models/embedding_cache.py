"""Persistent embedding cache keyed by (model id, sha256 of the content).

The cache lives outside every projection directory so that rebuilding a
projection (replaying the event log from position zero) does not have to embed
the same texts again: a replay becomes a sequence of cache lookups. It is the
one full-precision copy of every vector (the memories table holds a compact one).

Layout (``embeddings.sqlite`` and its siblings)::

    embeddings.sqlite        models(id, name, dim, rows)                       one row per model
                             vectors(model, sha, row, crc) WITHOUT ROWID       the index: 32-byte sha -> row
    embeddings.<id>.f32      the model's vectors: little-endian float32 rows, row r at r * dim * 4

A vector costs its 4 * dim bytes plus ~60 bytes of index, where a blob per row in a SQLite
b-tree cost ~1.35x its size (overflow pages); a bulk lookup is one indexed query and one gather
from a memory map.

Writers (the memories projector, the gateway's commit path, several processes) are serialised by
SQLite's own write lock (``BEGIN IMMEDIATE``): inside it the writer reads the model's row count,
writes the new vectors at the end of the file, then inserts their index rows and the new count and
commits. Readers only follow committed index rows, so they never see a row being written; a crash
before the commit leaves bytes past the count that the next writer overwrites. Each index row
carries the CRC-32 of its vector: a row whose bytes did not reach the disk (power loss: the vector
file is not fsynced before the commit) reads as missing, and the next ``put_many`` of it rewrites it.

Entries are immutable: the same (model, content) always maps to the same vector, so a ``put`` of
a cached sha is ignored.

The first format (``embeddings(model, sha, vec BLOB)``) is migrated on first use (in the caller's
thread: ~1.6 s per 20k vectors), in chunks (each its own transaction, so a concurrent opener just
helps), and read while it lasts; `export_blobs` writes
that format (one self-contained file) for backups.
"""

from __future__ import annotations

import hashlib
import mmap
import os
import sqlite3
import threading
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import structlog

log = structlog.get_logger(__name__)

__all__ = ["EmbeddingCache", "content_sha", "export_blobs"]

# Host parameters per ``IN (...)`` lookup. Old SQLite builds cap a statement at
# 999 variables; 500 keeps every statement well below that.
_CHUNK = 500
_MIGRATE_CHUNK = 2000

_VEC_DTYPE = np.dtype("<f4")
LEGACY_TABLE = "embeddings"

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS models (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, dim INTEGER NOT NULL, "
    "rows INTEGER NOT NULL DEFAULT 0)",
    "CREATE TABLE IF NOT EXISTS vectors (model INTEGER NOT NULL, sha BLOB NOT NULL, row INTEGER NOT NULL, "
    "crc INTEGER NOT NULL, PRIMARY KEY (model, sha)) WITHOUT ROWID",
)
_LEGACY_SCHEMA = (f"CREATE TABLE IF NOT EXISTS {LEGACY_TABLE} (model TEXT NOT NULL, sha TEXT NOT NULL, "
                  "vec BLOB NOT NULL, PRIMARY KEY (model, sha)) WITHOUT ROWID")


def content_sha(text: str) -> str:
    """Return the sha256 hex digest of ``text`` encoded as UTF-8."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _key(sha: str) -> bytes:
    """The stored key: the 32 bytes of a sha256 hex digest (any other string as its UTF-8 bytes)."""
    if len(sha) == 64:
        try:
            return bytes.fromhex(sha)
        except ValueError:
            pass
    return sha.encode("utf-8")


def _crc(row: np.ndarray) -> int:
    return zlib.crc32(np.ascontiguousarray(row, dtype=_VEC_DTYPE).tobytes())


class _Vectors:
    """One model's vector file: positioned writes, reads through a memory map grown on demand."""

    def __init__(self, path: Path, dim: int) -> None:
        self.path, self.dim = path, dim
        self.row_bytes = dim * _VEC_DTYPE.itemsize
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        self._map: mmap.mmap | None = None
        self._rows: np.ndarray = np.zeros((0, dim), dtype=_VEC_DTYPE)

    def write(self, first: int, vectors: np.ndarray) -> None:
        data = memoryview(np.ascontiguousarray(vectors, dtype=_VEC_DTYPE).tobytes())
        at = first * self.row_bytes
        while data:   # a regular file takes it all at once; a short write is continued
            n = os.pwrite(self._fd, data, at)
            data, at = data[n:], at + n

    def take(self, rows: np.ndarray) -> np.ndarray:
        """Float32 copies of `rows`; rows past the end of the file read as NaN (never written)."""
        if len(rows) and int(rows.max()) >= len(self._rows):
            self._remap()
        have = rows < len(self._rows)
        out = np.full((len(rows), self.dim), np.nan, dtype=np.float32)
        out[have] = self._rows[rows[have]]
        return out

    def _remap(self) -> None:
        size = os.fstat(self._fd).st_size
        count = size // self.row_bytes
        if count == 0:
            return
        self._rows = np.zeros((0, self.dim), dtype=_VEC_DTYPE)   # drop the old view before its map
        self._map = mmap.mmap(self._fd, count * self.row_bytes, access=mmap.ACCESS_READ)
        self._rows = np.frombuffer(self._map, dtype=_VEC_DTYPE).reshape(count, self.dim)

    def close(self) -> None:
        self._rows = np.zeros((0, self.dim), dtype=_VEC_DTYPE)
        self._map = None   # closed when no array refers to it any more
        os.close(self._fd)


class EmbeddingCache:
    """The embedding cache (see the module docstring).

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
            self.path, check_same_thread=False, isolation_level=None, timeout=60.0
        )
        self._conn.execute("PRAGMA journal_mode=WAL")
        self._conn.execute("PRAGMA synchronous=NORMAL")
        for statement in _SCHEMA:
            self._conn.execute(statement)
        self._files: dict[int, _Vectors] = {}
        self._models: dict[str, tuple[int, int]] = {}   # name -> (id, dim)
        self._legacy = self._has_legacy()
        self._pending = self._legacy   # migrated on first use: in the caller's (worker) thread, not at open
        log.debug("embedding_cache.open", path=str(self.path))

    # ------------------------------------------------------------------ plumbing

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise RuntimeError(f"embedding cache {self.path} is closed")
        if self._pending:
            self._pending = False
            self._migrate()
        return self._conn

    def vector_path(self, model: int) -> Path:
        return self.path.with_name(f"{self.path.stem}.{model}.f32")

    def _model(self, conn: sqlite3.Connection, name: str, dim: int | None = None) -> tuple[int, int] | None:
        """(id, dim) of model `name`; with `dim` (inside a write transaction) created when absent."""
        got = self._models.get(name)
        if got is None:
            row = conn.execute("SELECT id, dim FROM models WHERE name = ?", (name,)).fetchone()
            if row is None and dim is not None:
                cur = conn.execute("INSERT INTO models (name, dim) VALUES (?, ?)", (name, dim))
                row = (int(cur.lastrowid or 0), dim)
            if row is None:
                return None
            got = (int(row[0]), int(row[1]))
            if dim is None:
                self._models[name] = got   # committed: another writer's; ours is remembered after commit
        return got

    def _file(self, model: int, dim: int) -> _Vectors:
        f = self._files.get(model)
        if f is None:
            f = self._files[model] = _Vectors(self.vector_path(model), dim)
        return f

    def _has_legacy(self) -> bool:
        conn = self._conn
        assert conn is not None
        return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?",
                            (LEGACY_TABLE,)).fetchone() is not None

    # ------------------------------------------------------------------ reads

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
            model = self._model(conn, model_id)
            if model is not None:
                self._lookup(conn, model, unique, found)
            if self._legacy and len(found) < len(unique):
                self._legacy_lookup(conn, model_id, [s for s in unique if s not in found], found)
        return found

    def _lookup(self, conn: sqlite3.Connection, model: tuple[int, int], shas: list[str],
                found: dict[str, np.ndarray]) -> None:
        by_key = {_key(s): s for s in shas}
        keys = list(by_key)
        hits: list[tuple[bytes, int, int]] = []
        for start in range(0, len(keys), _CHUNK):
            chunk = keys[start:start + _CHUNK]
            marks = ",".join("?" * len(chunk))
            hits += conn.execute(f"SELECT sha, row, crc FROM vectors WHERE model = ? AND sha IN ({marks})",
                                 (model[0], *chunk)).fetchall()
        if not hits:
            return
        rows = self._file(*model).take(np.fromiter((h[1] for h in hits), dtype=np.int64, count=len(hits)))
        for (key, _, crc), vec in zip(hits, rows):
            if _crc(vec) == crc:
                found[by_key[key]] = vec
            else:   # not (fully) on disk: a miss, rewritten by the next put
                log.warning("embedding_cache.corrupt_row", path=str(self.path), sha=by_key[key])

    def _legacy_lookup(self, conn: sqlite3.Connection, model_id: str, shas: list[str],
                       found: dict[str, np.ndarray]) -> None:
        if not self._has_legacy():
            self._legacy = False
            return
        for start in range(0, len(shas), _CHUNK):
            chunk = shas[start:start + _CHUNK]
            marks = ",".join("?" * len(chunk))
            for sha, blob in conn.execute(f"SELECT sha, vec FROM {LEGACY_TABLE} WHERE model = ? AND sha IN ({marks})",
                                          (model_id, *chunk)).fetchall():
                found[sha] = np.frombuffer(blob, dtype=_VEC_DTYPE).astype(np.float32)

    # ------------------------------------------------------------------ writes

    def put_many(self, model_id: str, items: Mapping[str, np.ndarray]) -> None:
        """Store ``{sha: vector}`` for ``model_id`` in one transaction.

        Already-cached entries are left untouched (a row whose bytes fail their CRC is rewritten).
        """
        if not items:
            return
        vecs = {sha: np.ascontiguousarray(v, dtype=_VEC_DTYPE).reshape(-1) for sha, v in items.items()}
        with self._lock:
            self._put(self._connection(), model_id, vecs)

    def _put(self, conn: sqlite3.Connection, model_id: str, vecs: dict[str, np.ndarray]) -> None:
        conn.execute("BEGIN IMMEDIATE")
        try:
            model = self._store(conn, model_id, vecs)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        self._models[model_id] = model

    def _store(self, conn: sqlite3.Connection, model_id: str, vecs: dict[str, np.ndarray]) -> tuple[int, int]:
        """Inside a write transaction: the vectors not stored yet written at the end of the model's
        file, then their index rows and the new row count. Returns the model's (id, dim)."""
        dim = len(next(iter(vecs.values())))
        model = self._model(conn, model_id, dim)
        assert model is not None
        if model[1] != dim or any(len(v) != dim for v in vecs.values()):
            raise ValueError(f"embedding cache: {model_id} vectors have {model[1]} dimensions")
        todo = self._unstored(conn, model, vecs)
        if todo:
            (count,) = conn.execute("SELECT rows FROM models WHERE id = ?", (model[0],)).fetchone()
            self._file(*model).write(count, np.stack([vecs[s] for s in todo]))   # bytes first, index after
            conn.executemany("INSERT OR REPLACE INTO vectors (model, sha, row, crc) VALUES (?, ?, ?, ?)",
                             [(model[0], _key(s), count + i, _crc(vecs[s])) for i, s in enumerate(todo)])
            conn.execute("UPDATE models SET rows = ? WHERE id = ?", (count + len(todo), model[0]))
        return model

    def _unstored(self, conn: sqlite3.Connection, model: tuple[int, int], vecs: dict[str, np.ndarray]) -> list[str]:
        """The shas of `vecs` not cached yet (or whose stored bytes fail their CRC)."""
        have: dict[str, np.ndarray] = {}
        self._lookup(conn, model, list(vecs), have)
        return [s for s in vecs if s not in have]

    def _migrate(self) -> None:
        """Move the first format's blobs into the vector files, a chunk per transaction (a concurrent
        opener takes turns); then drop its table and give the space back (VACUUM)."""
        conn = self._conn
        assert conn is not None
        moved = 0
        while True:
            conn.execute("BEGIN IMMEDIATE")
            try:
                done = not self._has_legacy()   # another process finished it
                rows = [] if done else conn.execute(f"SELECT model, sha, vec FROM {LEGACY_TABLE} LIMIT ?",
                                                    (_MIGRATE_CHUNK,)).fetchall()
                if not done and not rows:
                    conn.execute(f"DROP TABLE {LEGACY_TABLE}")
                by_model: dict[str, dict[str, np.ndarray]] = {}
                for model, sha, blob in rows:
                    by_model.setdefault(model, {})[sha] = np.frombuffer(blob, dtype=_VEC_DTYPE)
                stored = [(name, self._store(conn, name, vecs)) for name, vecs in by_model.items()]
                conn.executemany(f"DELETE FROM {LEGACY_TABLE} WHERE model = ? AND sha = ?",
                                 [(model, sha) for model, sha, _ in rows])
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
            self._models.update(stored)
            moved += len(rows)
            if not rows:
                break
        self._legacy = False
        if moved:
            try:
                conn.execute("VACUUM")
            except sqlite3.OperationalError as exc:   # busy: another process reads; the space is reused anyway
                log.warning("embedding_cache.vacuum_skipped", path=str(self.path), error=str(exc))
            log.info("embedding_cache.migrated", path=str(self.path), vectors=moved)

    # ------------------------------------------------------------------ upkeep

    def count(self, model_id: str | None = None) -> int:
        """Number of cached vectors, for one model or for all of them."""
        with self._lock:
            conn = self._connection()
            if model_id is None:
                row = conn.execute("SELECT count(*) FROM vectors").fetchone()
            else:
                row = conn.execute("SELECT count(*) FROM vectors JOIN models ON models.id = vectors.model "
                                   "WHERE models.name = ?", (model_id,)).fetchone()
        return int(row[0])

    def close(self) -> None:
        """Close the database connection and the vector files. Idempotent."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            for f in self._files.values():
                f.close()
            self._files.clear()

    def __enter__(self) -> EmbeddingCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def export_blobs(cache_path: Path, dest: Path) -> int:
    """Write the cache at `cache_path` into `dest` as one self-contained SQLite file in the first
    format (a vector blob per row; what backups archive, and what `EmbeddingCache` migrates on
    open); returns the number of vectors. Reads a consistent snapshot; writers are not blocked."""
    src = sqlite3.connect(cache_path, isolation_level=None, timeout=60.0)
    out = sqlite3.connect(dest, isolation_level=None)
    written = 0
    try:
        out.execute("PRAGMA page_size=16384")
        out.execute(_LEGACY_SCHEMA)
        out.execute("BEGIN")
        src.execute("BEGIN")   # one read snapshot for the index; the rows it names never change
        names = {"vectors", "models"} <= {r[0] for r in src.execute("SELECT name FROM sqlite_master")}
        models = src.execute("SELECT id, name, dim FROM models").fetchall() if names else []
        for model, name, dim in models:
            path = cache_path.with_name(f"{cache_path.stem}.{model}.f32")
            if not path.exists():
                continue
            vectors = _Vectors(path, int(dim))
            try:
                cur = src.execute("SELECT sha, row, crc FROM vectors WHERE model = ? ORDER BY row", (model,))
                while chunk := cur.fetchmany(_MIGRATE_CHUNK):
                    rows = vectors.take(np.array([c[1] for c in chunk], dtype=np.int64))
                    batch = [(name, (k.hex() if len(k) == 32 else k.decode("utf-8")), v.tobytes())
                             for (k, _, crc), v in zip(chunk, rows) if _crc(v) == crc]
                    out.executemany(f"INSERT OR IGNORE INTO {LEGACY_TABLE} (model, sha, vec) VALUES (?, ?, ?)", batch)
                    written += len(batch)
            finally:
                vectors.close()
        legacy = src.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (LEGACY_TABLE,)).fetchone()
        if legacy is not None:   # a cache mid-migration
            for row in src.execute(f"SELECT model, sha, vec FROM {LEGACY_TABLE}"):
                written += out.execute(f"INSERT OR IGNORE INTO {LEGACY_TABLE} VALUES (?, ?, ?)", row).rowcount
        src.execute("COMMIT")
        out.execute("COMMIT")
    finally:
        src.close()
        out.close()
    return written
