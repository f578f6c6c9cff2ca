"""Bounded caches for long-lived LanceDB connections.

A LanceDB connection caches index and file metadata per table version in its session, and its default
session is allowed gigabytes. A reader that follows a table a projector keeps writing opens a new
version every time: its caches grew by ~0.5 MB a version on the million benchmark's 100k-memory table
(189 MB after 400 versions), and the gateway that had followed an ingest to 1M memories held 4.8 GB
against 3.3 GB for one started fresh (both after recalls: million.py). A session with bounded caches
keeps what the current version needs and lets the older versions' entries go (the same 400 versions
with DELTA_READS: 37 MB, flat after ~200).
"""

from __future__ import annotations

from dataclasses import dataclass

import lancedb

MB = 1 << 20


@dataclass(frozen=True, slots=True)
class CacheBounds:
    index_bytes: int
    metadata_bytes: int

    def session(self) -> lancedb.Session:
        return lancedb.Session(index_cache_size_bytes=self.index_bytes, metadata_cache_size_bytes=self.metadata_bytes)


#: The serving index reads the rows changed since a position (a scan of one version, no vector search).
DELTA_READS = CacheBounds(index_bytes=32 * MB, metadata_bytes=32 * MB)
#: Readers that may search (recall falls back on LanceDB while the serving index loads: its vector index).
SEARCH_READS = CacheBounds(index_bytes=256 * MB, metadata_bytes=64 * MB)
