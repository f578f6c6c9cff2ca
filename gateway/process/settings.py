"""Frozen settings, built once by the CLI (the only place that reads the environment)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from commands.model import Limits


@dataclass(frozen=True, slots=True)
class Settings:
    redis_url: str
    data_dir: Path
    api_key: str
    host: str = "127.0.0.1"
    port: int = 7821
    instance_id: str = "zhiyi-1"
    durable: bool = False
    bge_endpoint: str | None = None
    bge_api_key: str | None = None
    bge_model: str | None = None
    embedding_threads: int = 1
    query_embedding_process: bool = False  # the local model embeds queries in a child (the CLI's default;
                                           # ZHIYI_QUERY_EMBEDDING_PROCESS=0 keeps them in the gateway)
    rerank_endpoint: str | None = None   # RERANK_ENDPOINT: a bge-reranker /v1/rerank provider
    rerank_api_key: str | None = None
    rerank_model: str | None = None
    llm_endpoint: str | None = None      # LLM_ENDPOINT: an OpenAI-compatible /v1/chat/completions provider
    llm_api_key: str | None = None
    llm_model: str = "default"
    llm_daily_limit: int = 500           # ZHIYI_LLM_DAILY_LIMIT: chat calls per UTC day (0: unlimited)
    local_rerank: bool = False           # ZHIYI_LOCAL_RERANK=1: the e5 re-scorer (slow on small CPUs)
    recall_cache_ttl_s: int = 3600       # recall.cache_ttl_seconds; 0 disables the search cache
    forget_capacity: int = 10_000        # live memories per namespace above which a forget run evicts (LRU)
    tick_interval_s: float = 3600.0      # ZHIYI_TICK_INTERVAL_S: scheduler period (time rules, forget run); 0: off
    run_projectors: bool = True
    run_reactions: bool = True           # the reactions runner (policies) beside the projectors
    run_scheduler: bool = True           # the periodic tick (quality deadlines, forgetting, graph prune)
    ready_file: Path | None = None       # `zhiyi project`: touched once the projectors run (for `zhiyi up`)
    projectors_only: tuple[str, ...] = ()
    projection_wait_s: float = 5.0
    max_body_bytes: int = 64 * 1024 * 1024
    log_json: bool = False
    limits: Limits = field(default_factory=Limits)

    def __post_init__(self) -> None:
        # every path absolute, once: readers build `file:` URIs and children run elsewhere
        object.__setattr__(self, "data_dir", absolute_path(self.data_dir))
        if self.ready_file is not None:
            object.__setattr__(self, "ready_file", absolute_path(self.ready_file))

    @property
    def embedding_cache_path(self) -> Path:
        # outside any projection dir, so rebuilds stay warm
        return self.data_dir / "cache" / "embeddings.sqlite"


def absolute_path(path: str | Path) -> Path:
    """`path` made absolute against the current directory (`~` expanded; symlinks kept)."""
    return Path(os.path.abspath(Path(path).expanduser()))
