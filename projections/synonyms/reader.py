"""Query expansion with the synonyms read model (`projections/synonyms/projector.py`, SQLite `synonyms.db`).

The relation is *symmetric per addition*: `synonym.added(term, [a, b])` makes term, a and b
mutually synonymous. Additions are NOT merged transitively (adding bank→[river bank] and
bank→[finance] does not make "river bank" a synonym of "finance"): a polysemous word must not
chain unrelated meanings together.

Matching: terms are compared by `normalize_term` (NFKC, case-folded, whitespace collapsed), so
latin is case-insensitive and Chinese is as-is. A term with CJK characters matches anywhere in
the query (Chinese has no spaces); a latin term matches whole words only ("db" is not in "dbs";
CJK characters next to it count as boundaries: "用redis缓存" contains "redis").

`SynonymsReader.expansions(query)` is cheap enough for every recall: the table is cached in memory
and re-read only when the database changed (`PRAGMA data_version`, plus the file's inode in case
the projection was rebuilt in place).
"""

from __future__ import annotations

import os
import re
import sqlite3
import threading
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Iterable

import orjson

DB_FILE = "synonyms.db"

_SPACES = re.compile(r"\s+")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0002fa1f]")


def normalize_term(text: str) -> str:
    """The comparison key of a term or query: NFKC, case-folded, single spaces, stripped."""
    return _SPACES.sub(" ", unicodedata.normalize("NFKC", text).casefold()).strip()


def has_cjk(text: str) -> bool:
    return _CJK.search(text) is not None


def _word_char(ch: str) -> bool:
    return (ch.isalnum() or ch == "_") and not has_cjk(ch)


def occurs(key: str, text: str) -> int:
    """Index of the first occurrence of normalized `key` in normalized `text`, or -1.

    CJK keys: any substring. Latin keys: whole words (boundaries where the key starts/ends
    with a word character)."""
    if not key:
        return -1
    if has_cjk(key):
        return text.find(key)
    start = text.find(key)
    while start >= 0:
        end = start + len(key)
        before_ok = start == 0 or not _word_char(key[0]) or not _word_char(text[start - 1])
        after_ok = end == len(text) or not _word_char(key[-1]) or not _word_char(text[end])
        if before_ok and after_ok:
            return start
        start = text.find(key, start + 1)
    return -1


@dataclass(frozen=True, slots=True)
class SynonymTable:
    """{namespace: {term key: ((synonym key, synonym as written), ...)}} — symmetric edges."""

    by_namespace: dict[str, dict[str, tuple[tuple[str, str], ...]]] = field(default_factory=dict)

    @classmethod
    def from_rows(cls, rows: Iterable[tuple[str, str, str, str]]) -> "SynonymTable":
        """Rows (namespace, term_key, synonym_key, synonym), in any order."""
        acc: dict[str, dict[str, list[tuple[str, str]]]] = {}
        for ns, term_key, syn_key, syn in rows:
            acc.setdefault(ns, {}).setdefault(term_key, []).append((syn_key, syn))
        return cls({ns: {k: tuple(sorted(v)) for k, v in terms.items()} for ns, terms in acc.items()})

    def expansions(self, query: str, namespaces: Iterable[str] | None = None) -> list[str]:
        """Synonyms of the terms found in `query` that the query does not already contain.

        Ordered by where their term occurs in the query, then by synonym; no duplicates."""
        text = normalize_term(query)
        if not text:
            return []
        spaces = self.by_namespace.keys() if namespaces is None else \
            [ns for ns in dict.fromkeys(namespaces) if ns in self.by_namespace]
        found: list[tuple[int, str, tuple[tuple[str, str], ...]]] = []
        for ns in spaces:
            for term_key, syns in self.by_namespace[ns].items():
                if term_key in text:  # cheap pre-check before the boundary rules
                    at = occurs(term_key, text)
                    if at >= 0:
                        found.append((at, term_key, syns))
        out: list[str] = []
        seen: set[str] = set()
        for _, _, syns in sorted(found, key=lambda f: (f[0], f[1])):
            for syn_key, syn in syns:
                if syn_key in seen or occurs(syn_key, text) >= 0:
                    continue
                seen.add(syn_key)
                out.append(syn)
        return out


class SynonymsReader:
    """Read side of the synonyms projection under `directory` (thread-safe, never creates files)."""

    reads: ClassVar[tuple[str, ...]] = ("synonyms",)   # the projection to wait for (read-your-writes)

    def __init__(self, directory: Path) -> None:
        self.path = Path(directory).absolute() / DB_FILE  # `as_uri()` needs an absolute path
        self._path = str(self.path)    # stat'ed by every recall
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self._inode: tuple[int, int] | None = None
        self._version: int | None = None
        self._table = SynonymTable()

    def table(self) -> SynonymTable:
        """The current table, re-read only when the database changed since the last call."""
        with self._lock:
            try:
                st = os.stat(self._path)
            except FileNotFoundError:
                self._drop()
                self._table = SynonymTable()
                return self._table
            inode = (st.st_dev, st.st_ino)
            if self._conn is None or inode != self._inode:
                self._drop()
                self._conn = sqlite3.connect(f"{self.path.as_uri()}?mode=ro", uri=True, check_same_thread=False)
                self._inode = inode
            try:
                version = self._conn.execute("PRAGMA data_version").fetchone()[0]
                if version != self._version:
                    self._table = SynonymTable.from_rows(self._conn.execute(
                        "SELECT namespace, term_key, synonym_key, synonym FROM pairs"))
                    self._version = version
            except sqlite3.OperationalError:  # created but not yet initialised by the projector
                self._drop()
                self._table = SynonymTable()
            return self._table

    def expansions(self, query: str, namespaces: Iterable[str] | None = None) -> list[str]:
        """Extra terms for lexical search: see `SynonymTable.expansions`."""
        return self.table().expansions(query, namespaces)

    def additions(self, namespace: str | None = None, limit: int = 1000) -> list[dict]:
        """The additions, oldest first: [{term, synonyms, namespace, position}]."""
        with self._lock:
            if not self.path.exists():
                return []
            conn = sqlite3.connect(f"{self.path.as_uri()}?mode=ro", uri=True)
        try:
            sql = "SELECT position, namespace, term, synonyms FROM additions"
            args: tuple = ()
            if namespace is not None:
                sql += " WHERE namespace = ?"
                args = (namespace,)
            rows = conn.execute(sql + " ORDER BY ms, seq LIMIT ?", (*args, limit)).fetchall()
        except sqlite3.OperationalError:
            return []
        finally:
            conn.close()
        return [{"term": term, "synonyms": orjson.loads(syns), "namespace": ns, "position": pos}
                for pos, ns, term, syns in rows]

    def _drop(self) -> None:
        if self._conn is not None:
            self._conn.close()
        self._conn = None
        self._inode = None
        self._version = None

    def close(self) -> None:
        with self._lock:
            self._drop()
