"""The process's Prometheus registry (seed 4.3): one per app, never module-level. Requests are timed by
the access-log middleware (`zhiyi_request_duration_seconds`, a histogram by route and method); the
other series are gauges set from the live state when `/metrics` is scraped
(`gateway.http.handlers.prometheus`)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Gauge, Histogram

BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0)


@dataclass
class Telemetry:
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)
    started: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        r = self.registry
        self.requests = Histogram("zhiyi_request_duration_seconds", "HTTP request duration by route",
                                  ["endpoint", "method"], registry=r, buckets=BUCKETS)
        self.uptime = Gauge("zhiyi_uptime_seconds", "seconds since this gateway started", registry=r)
        self.distill_queue = Gauge("zhiyi_distill_queue_depth", "episodes waiting for their extractor", registry=r)
        self.conflicts = Gauge("zhiyi_conflicts_pending", "open conflicts", registry=r)
        self.vectors = Gauge("zhiyi_lancedb_vector_count", "rows of the memories table (LanceDB)", registry=r)
        self.llm_calls = Gauge("zhiyi_distill_llm_calls_today", "LLM calls counted today (UTC), by budget",
                               ["budget"], registry=r)
        self.llm_limit = Gauge("zhiyi_llm_daily_limit", "the daily LLM call limit, by budget (0: unlimited)",
                               ["budget"], registry=r)
        self.consolidate_duration = Gauge("zhiyi_consolidate_last_duration_seconds",
                                          "duration of the last deep-consolidation run", registry=r)
        self.consolidate_failures = Gauge("zhiyi_consolidate_step_failures",
                                          "failures in a row of each consolidation step", ["step"], registry=r)
        self.trigger_failures = Gauge("zhiyi_trigger_failures", "failures in a row of each trigger", ["trigger"],
                                      registry=r)
        self.trigger_paused = Gauge("zhiyi_trigger_paused", "1 when the trigger is paused", ["trigger"], registry=r)
        self.lag = Gauge("zhiyi_projector_lag_seconds", "how far each projector's checkpoint is behind the log "
                         "(stream time)", ["projector", "instance"], registry=r)
        self.instance_up = Gauge("zhiyi_instance_up", "1 while the process beats (from the heartbeats of every "
                                 "instance: gateways, projector processes, replicas)", ["instance", "role"], registry=r)
        self.instance_lag = Gauge("zhiyi_instance_lag_seconds", "how far the position each process's reads reach is "
                                  "behind the log (stream time, from its heartbeat)", ["instance", "role"], registry=r)
        self.instance_lag_events = Gauge("zhiyi_instance_lag_events", "events after the position each process's reads "
                                         "reach (counted up to 10,000)", ["instance", "role"], registry=r)
        self.events = Gauge("zhiyi_events_total", "events in the log, by type", ["type"], registry=r)
        self.cache_ratio = Gauge("zhiyi_recall_cache_hit_ratio", "recall cache hits / lookups in this process",
                                 registry=r)
        self.dead_letters = Gauge("zhiyi_reactions_dead_letters", "entries in the reactions' dead-letter stream",
                                  registry=r)

    def observe(self, endpoint: str, method: str, seconds: float) -> None:
        self.requests.labels(endpoint, method).observe(seconds)
