"""Handing freed heap back to the operating system (after the serving index loads, between a rebuild's
batches) and keeping the serving index's objects out of the cyclic collector's scans."""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import gc
from typing import Any

__all__ = ["MMAP_THRESHOLD", "fix_mmap_threshold", "freeze_long_lived", "give_back_freed_memory"]

#: Blocks from this size up get their own mapping, returned to the OS when freed (glibc's M_MMAP_THRESHOLD).
MMAP_THRESHOLD = 4 << 20
_M_MMAP_THRESHOLD = -3   # mallopt's parameter number (malloc.h)


@functools.cache
def _libc() -> Any:
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name) if name else None
    except OSError:
        return None


def give_back_freed_memory() -> None:
    """Return the heap a load freed to the OS. Arrow's pool and glibc's per-thread arenas keep
    what the scan's batches and the worker threads used: measured at 50k memories, the load's
    RSS growth was 6-7 KB a memory before this and 1.7-2.3 KB after."""
    import pyarrow as pa   # here: the CLI imports this module for every command

    pa.default_memory_pool().release_unused()
    libc = _libc()
    if libc is not None and hasattr(libc, "malloc_trim"):
        libc.malloc_trim(0)


def fix_mmap_threshold(threshold: int = MMAP_THRESHOLD) -> bool:
    """Fix glibc's mmap threshold for this process (True when it took). Left dynamic, glibc raises it
    (up to 32 MB) whenever a mapped block is freed, so the serving index's and a rebuild's big arrays,
    grown and replaced many times, end up inside the heap, where the holes they leave are kept:
    measured at 100k memories, a serving index load grew the RSS by 4,044 B a memory, 2,787 B with
    the threshold fixed at 4 MiB, and the memories projection's rebuild held 517 MB anonymous after
    its fold instead of 329 MB. A recall's temporaries (a score per slot: 0.8 MB at 200k) stay below
    it, in the heap."""
    libc = _libc()
    if libc is None or not hasattr(libc, "mallopt"):
        return False
    return bool(libc.mallopt(_M_MMAP_THRESHOLD, threshold))


def freeze_long_lived() -> None:
    """Move every object alive now out of the cyclic collector's reach (`gc.freeze`). The serving
    index held two GC-tracked `array.array`s and a tuple per term per namespace (~300k objects at
    100k memories; now its postings are flat arrays, but its lists and partitions remain), which every
    full collection walked: 76 ms at 100k, ~10x that at 1M, a pause of
    the event loop and of every recall in flight. Reference counting still frees them (a reload
    drops the old index; nothing in it is cyclic); new objects are collected as before. The young
    generations are collected first (~0.2 ms), so that no recent garbage cycle is frozen with them."""
    gc.collect(1)
    gc.freeze()
