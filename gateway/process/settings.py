"""Frozen settings, built once by the CLI, and the process environment they are built from.

This is the only module that reads environment variables (`Environment.read`, once per `zhiyi`
command); everything else receives `Settings` or an `Environment`.
"""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from commands.model import Limits
from commands.rate_limits import RateLimits


DISTILL_EXTRACTORS = ("learned", "rules")   # ZHIYI_DISTILL_EXTRACTOR without an LLM (commands/distill/)
INSTANCE_ID_FILE = "instance_id"             # <data-dir>/instance_id: a server's id, kept across restarts


@dataclass(frozen=True, slots=True)
class Settings:
    redis_url: str
    data_dir: Path
    api_key: str
    host: str = "127.0.0.1"
    port: int = 7821
    instance_id: str = "zhiyi-1"
    claim_instance: bool = False         # a server process (`zhiyi up/serve/project`): refuse to start while
                                         # another live process holds the same (instance id, role)
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
    llm_distill_daily_limit: int = 50    # ZHIYI_LLM_DISTILL_DAILY_LIMIT: distillation's own budget (0: unlimited)
    distill_batch_size: int = 10         # LLM distillation: episodes per call (seed 3.1)
    distill_max_wait_s: float = 300.0    # ... or sooner, once the oldest queued episode waited this long
    distill_extractor: str = "learned"   # ZHIYI_DISTILL_EXTRACTOR: learned (e5 judge + rules) | rules
    local_rerank: bool = False           # ZHIYI_LOCAL_RERANK=1: the e5 re-scorer (slow on small CPUs)
    conflict_check: bool = True          # ZHIYI_CONFLICT_CHECK=0: commits are not compared with stored memories
    merge: bool = False                  # ZHIYI_MERGE=1: the dedup reaction merges duplicates and replacements
    conflict_auto_resolve: bool = True   # ZHIYI_CONFLICT_AUTO_RESOLVE=0: every conflict waits for a person
    recall_cache_ttl_s: int = 3600       # recall.cache_ttl_seconds; 0 disables the search cache
    forget_capacity: int = 10_000        # live memories per namespace above which a forget run evicts (LRU)
    ephemeral_ttl_s: float = 86_400.0    # ZHIYI_EPHEMERAL_TTL_S: older ephemeral memories are forgotten (0: never)
    tick_interval_s: float = 30.0        # ZHIYI_TICK_INTERVAL_S: how often the triggers are evaluated; 0: off
    run_projectors: bool = True
    run_reactions: bool = True           # the reactions runner (policies) beside the projectors
    run_scheduler: bool = True           # the triggers (seed 6.4): distill, merge, prune, decay, ... (commands.triggers)
    ready_file: Path | None = None       # `zhiyi project`: touched once the projectors run (for `zhiyi up`)
    projectors_only: tuple[str, ...] = ()
    projection_wait_s: float = 5.0
    push_queue_messages: int = 1000      # WebSocket: messages queued per socket before resync + close 4000
    push_queue_bytes: int = 4 * 1024 * 1024   # ... or bytes queued
    max_body_bytes: int = 64 * 1024 * 1024
    log_json: bool = False
    limits: Limits = field(default_factory=Limits)
    rate_limits: RateLimits | None = None  # per-agent token buckets (ZHIYI_RATE_LIMITS; None: off — the CLI's
                                           # default is the seed's quotas, a Settings built in code has none)
    advertise_url: str | None = None     # ZHIYI_ADVERTISE_URL: this process's HTTP URL in /api/v1/instances
    backup_dir: Path | None = None       # ZHIYI_BACKUP_DIR: where backups are written (None: <data-dir>/backups)
    cors_origins: tuple[str, ...] = ()   # ZHIYI_CORS_ORIGINS: origins browsers may call from (("*",): any; (): none)
    # a LAN replica (`zhiyi replica`): its primary, and its own Redis for what is not the log's
    primary_url: str | None = None       # the primary's HTTP base URL (writes are forwarded to it)
    primary_redis: str | None = None     # the primary's Redis, without credentials (shown by /health)
    replica_key: str | None = None       # ZHIYI_REPLICA_KEY: issued by the primary's admin
    state_redis_url: str | None = None   # checkpoints, generations, recall cache (the log's Redis is read-only)
    replica_auth_grace_s: float = 60.0   # ZHIYI_REPLICA_AUTH_GRACE_S: cut off longer, agent keys answer 503

    @property
    def is_replica(self) -> bool:
        return self.primary_url is not None

    @property
    def role(self) -> str:
        return "replica" if self.is_replica else "gateway"

    @property
    def public_url(self) -> str:
        """The URL other machines reach this process at (`advertise_url`, else host:port; a wildcard
        host is replaced by this machine's name)."""
        if self.advertise_url:
            return self.advertise_url.rstrip("/")
        host = socket.gethostname() if self.host in ("0.0.0.0", "::", "") else self.host
        return f"http://{host}:{self.port}"

    def __post_init__(self) -> None:
        if self.distill_extractor not in DISTILL_EXTRACTORS:
            raise ValueError(f"distill_extractor must be one of {', '.join(DISTILL_EXTRACTORS)}, "
                             f"not {self.distill_extractor!r}")
        # every path absolute, once: readers build `file:` URIs and children run elsewhere
        object.__setattr__(self, "data_dir", absolute_path(self.data_dir))
        if self.ready_file is not None:
            object.__setattr__(self, "ready_file", absolute_path(self.ready_file))
        if self.backup_dir is not None:
            object.__setattr__(self, "backup_dir", absolute_path(self.backup_dir))

    @property
    def backups_path(self) -> Path:
        return self.backup_dir or self.data_dir / "backups"

    @property
    def embedding_cache_path(self) -> Path:
        # outside any projection dir, so rebuilds stay warm
        return self.data_dir / "cache" / "embeddings.sqlite"


def parse_origins(text: str | None) -> tuple[str, ...]:
    """`ZHIYI_CORS_ORIGINS`: () when unset; ("*",) for any origin; else the listed origins (scheme://host[:port])."""
    origins = tuple(o.strip().rstrip("/") for o in (text or "").split(",") if o.strip())
    for origin in origins:
        if origin != "*" and not origin.startswith(("http://", "https://")):
            raise ValueError(f"ZHIYI_CORS_ORIGINS: {origin!r} is not an origin (http(s)://host[:port]) or *")
    return origins


def child_environment(**extra: str) -> dict[str, str]:
    """This process's environment with `extra` set: for a child process (e.g. a secret that must not
    appear on its command line)."""
    return {**os.environ, **extra}


def absolute_path(path: str | Path) -> Path:
    """`path` made absolute against the current directory (`~` expanded; symlinks kept)."""
    return Path(os.path.abspath(Path(path).expanduser()))


def _choice(name: str, value: str | None, choices: tuple[str, ...]) -> str:
    """`value` (trimmed, lower-cased) if it is one of `choices`; unset means the first."""
    value = (value or "").strip().lower() or choices[0]
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}, not {value!r}")
    return value


def _flag(value: str | None, default: bool = False) -> bool:
    value = (value or "").strip().lower()
    return default if not value else value in {"1", "true", "yes", "on"}


@dataclass(frozen=True, slots=True)
class Environment:
    """What the environment configures (README, Configuration), read once by `Environment.read`."""

    redis_url: str | None = None             # REDIS_URL
    api_key: str | None = None               # API_KEY (else <data-dir>/api_key)
    data_dir: str = "./data"                 # ZHIYI_DATA_DIR
    instance_id: str | None = None           # ZHIYI_INSTANCE_ID (else <data-dir>/instance_id)
    durable: bool = False                    # ZHIYI_DURABLE
    inprocess_projectors: bool = False       # ZHIYI_INPROCESS_PROJECTORS
    no_reactions: bool = False               # ZHIYI_NO_REACTIONS
    log_json: bool = False                   # ZHIYI_LOG_JSON
    log_level: str = "info"                  # ZHIYI_LOG_LEVEL
    bge_endpoint: str | None = None
    bge_api_key: str | None = None
    bge_model: str | None = None
    embedding_threads: int = 1               # ZHIYI_EMBEDDING_THREADS
    query_embedding_process: bool = True     # ZHIYI_QUERY_EMBEDDING_PROCESS
    rerank_endpoint: str | None = None
    rerank_api_key: str | None = None
    rerank_model: str | None = None
    llm_endpoint: str | None = None
    llm_api_key: str | None = None
    llm_model: str = "default"
    llm_daily_limit: int = 500               # ZHIYI_LLM_DAILY_LIMIT
    llm_distill_daily_limit: int = 50        # ZHIYI_LLM_DISTILL_DAILY_LIMIT
    distill_extractor: str = "learned"       # ZHIYI_DISTILL_EXTRACTOR
    local_rerank: bool = False               # ZHIYI_LOCAL_RERANK
    conflict_check: bool = True              # ZHIYI_CONFLICT_CHECK
    merge: bool = False                      # ZHIYI_MERGE (off until its precision is measured >= 0.95)
    conflict_auto_resolve: bool = True       # ZHIYI_CONFLICT_AUTO_RESOLVE
    recall_cache_ttl_s: int = 3600           # ZHIYI_RECALL_CACHE_TTL
    forget_capacity: int = 10_000            # ZHIYI_FORGET_CAPACITY
    ephemeral_ttl_s: float = 86_400.0        # ZHIYI_EPHEMERAL_TTL_S
    tick_interval_s: float = 30.0            # ZHIYI_TICK_INTERVAL_S
    advertise_url: str | None = None         # ZHIYI_ADVERTISE_URL
    cors_origins: tuple[str, ...] = ()       # ZHIYI_CORS_ORIGINS
    rate_limits: RateLimits | None = field(default_factory=RateLimits)   # ZHIYI_RATE_LIMITS (off: None)
    replica_key: str | None = None           # ZHIYI_REPLICA_KEY (`zhiyi replica`)
    replica_auth_grace_s: float = 60.0       # ZHIYI_REPLICA_AUTH_GRACE_S
    backup_dir: str | None = None            # ZHIYI_BACKUP_DIR (`zhiyi backup --to`; else <data-dir>/backups)

    @classmethod
    def read(cls, environ: Mapping[str, str] | None = None) -> "Environment":
        env = os.environ if environ is None else environ
        return cls(
            redis_url=env.get("REDIS_URL") or None,
            api_key=env.get("API_KEY") or None,
            data_dir=env.get("ZHIYI_DATA_DIR", "./data"),
            instance_id=env.get("ZHIYI_INSTANCE_ID") or None,
            durable=_flag(env.get("ZHIYI_DURABLE")),
            inprocess_projectors=_flag(env.get("ZHIYI_INPROCESS_PROJECTORS")),
            no_reactions=_flag(env.get("ZHIYI_NO_REACTIONS")),
            log_json=_flag(env.get("ZHIYI_LOG_JSON")),
            log_level=env.get("ZHIYI_LOG_LEVEL", "info"),
            bge_endpoint=env.get("BGE_ENDPOINT") or None,
            bge_api_key=env.get("BGE_API_KEY") or None,
            bge_model=env.get("BGE_MODEL") or None,
            embedding_threads=int(env.get("ZHIYI_EMBEDDING_THREADS", "1")),
            query_embedding_process=_flag(env.get("ZHIYI_QUERY_EMBEDDING_PROCESS"), default=True),
            rerank_endpoint=env.get("RERANK_ENDPOINT") or None,
            rerank_api_key=env.get("RERANK_API_KEY") or None,
            rerank_model=env.get("RERANK_MODEL") or None,
            llm_endpoint=env.get("LLM_ENDPOINT") or None,
            llm_api_key=env.get("LLM_API_KEY") or None,
            llm_model=env.get("LLM_MODEL") or "default",
            llm_daily_limit=int(env.get("ZHIYI_LLM_DAILY_LIMIT", "500")),
            llm_distill_daily_limit=int(env.get("ZHIYI_LLM_DISTILL_DAILY_LIMIT", "50")),
            distill_extractor=_choice("ZHIYI_DISTILL_EXTRACTOR", env.get("ZHIYI_DISTILL_EXTRACTOR"), DISTILL_EXTRACTORS),
            local_rerank=_flag(env.get("ZHIYI_LOCAL_RERANK")),
            conflict_check=_flag(env.get("ZHIYI_CONFLICT_CHECK"), default=True),
            merge=_flag(env.get("ZHIYI_MERGE")),
            conflict_auto_resolve=_flag(env.get("ZHIYI_CONFLICT_AUTO_RESOLVE"), default=True),
            recall_cache_ttl_s=int(env.get("ZHIYI_RECALL_CACHE_TTL", "3600")),
            forget_capacity=int(env.get("ZHIYI_FORGET_CAPACITY", "10000")),
            ephemeral_ttl_s=float(env.get("ZHIYI_EPHEMERAL_TTL_S", "86400")),
            tick_interval_s=float(env.get("ZHIYI_TICK_INTERVAL_S", "30")),
            advertise_url=env.get("ZHIYI_ADVERTISE_URL") or None,
            cors_origins=parse_origins(env.get("ZHIYI_CORS_ORIGINS")),
            rate_limits=RateLimits.parse(env.get("ZHIYI_RATE_LIMITS")),
            replica_key=env.get("ZHIYI_REPLICA_KEY") or None,
            replica_auth_grace_s=float(env.get("ZHIYI_REPLICA_AUTH_GRACE_S", "60")),
            backup_dir=env.get("ZHIYI_BACKUP_DIR") or None,
        )

    def default_instance_id(self, data_dir: Path | None = None, *, create: bool = False) -> str:
        """ZHIYI_INSTANCE_ID, else the id kept in `<data_dir>/instance_id` (a UUID written on a server's
        first start: `create`), else host-pid (a command run on a data dir no server has used)."""
        if self.instance_id:
            return self.instance_id
        if data_dir is not None:
            path = Path(data_dir) / INSTANCE_ID_FILE
            if path.exists():
                return path.read_text(encoding="utf-8").strip()
            if create:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(str(uuid.uuid4()) + "\n", encoding="utf-8")
                return path.read_text(encoding="utf-8").strip()
        return f"{socket.gethostname()}-{os.getpid()}"
