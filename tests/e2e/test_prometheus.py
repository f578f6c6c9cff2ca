"""GET /metrics through the real app (seed 4.3): the admin key as X-API-Key or a Bearer token, the
Prometheus text format (parsed with prometheus_client's parser), and figures that follow what the
app did; every series the shipped alert rules use is served."""

from __future__ import annotations

import re

from prometheus_client.parser import text_string_to_metric_families

from tests.bench._harness import ROOT
from tests.e2e.conftest import ADMIN_KEY, assert_error


async def _scrape(api, **headers) -> dict:
    await api.settle()
    resp = await api.client.get("/metrics", headers=headers or {"Authorization": f"Bearer {ADMIN_KEY}"})
    assert resp.status == 200, await resp.text()
    assert resp.content_type == "text/plain"
    return {f.name: f for f in text_string_to_metric_families(await resp.text())}


def _value(families: dict, name: str, **labels) -> float:
    for sample in families[name].samples:
        if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items()):
            return sample.value
    raise AssertionError(f"no sample {name} {labels}")


async def test_metrics_parse_and_follow_the_apps_activity(api):
    key = await api.register("alice")
    status, body = await api.commit(key, "The NAS backs up every night at 02:00")
    assert status == 201
    for _ in range(2):   # the second is served from the recall cache
        await api.recall(key, "when does the NAS back up", after=body["position"])
    families = await _scrape(api)
    assert _value(families, "zhiyi_uptime_seconds") > 0
    count = next(s.value for s in families["zhiyi_request_duration_seconds"].samples
                 if s.name.endswith("_count") and s.labels["endpoint"] == "/api/v1/recall")
    assert count == 2
    assert _value(families, "zhiyi_lancedb_vector_count") == 1
    assert _value(families, "zhiyi_events_total", type="memory.committed") == 1
    assert _value(families, "zhiyi_events_total", type="agent.registered") == 1
    assert _value(families, "zhiyi_conflicts_pending") == 0 and _value(families, "zhiyi_distill_queue_depth") == 0
    assert _value(families, "zhiyi_recall_cache_hit_ratio") == 0.5
    assert _value(families, "zhiyi_reactions_dead_letters") == 0
    assert _value(families, "zhiyi_distill_llm_calls_today", budget="general") == 0
    lags = {s.labels["projector"]: s.value for s in families["zhiyi_projector_lag_seconds"].samples}
    assert {"memories", "graph", "metrics", "consolidation"} <= set(lags) and all(v == 0 for v in lags.values())
    # other processes' figures come from their heartbeats: this gateway's, and a replica's sent to it
    status, issued = await api.call("POST", "/api/v1/admin/replicas", json={"instance_id": "rep-1"})
    status, _ = await api.call("POST", "/api/v1/replicas/rep-1/ops", issued["replica_key"], json={
        "ops": [], "status": {"position": body["position"], "url": "http://10.0.0.7:7821"}})
    assert status == 200
    families = await _scrape(api)
    assert _value(families, "zhiyi_instance_up", instance="e2e", role="gateway") == 1
    assert _value(families, "zhiyi_instance_up", instance="rep-1", role="replica") == 1
    assert _value(families, "zhiyi_instance_lag_events", instance="rep-1", role="replica") >= 1   # events since
    # the shipped alert rules use only series served here
    rules = (ROOT / "deploy" / "prometheus-alerts.yml").read_text(encoding="utf-8")
    used = {re.sub(r"_bucket$", "", name) for name in re.findall(r"\bzhiyi_[a-z_]+", rules)}
    assert used and used <= set(families), used - set(families)


async def test_metrics_needs_the_admin_key(api):
    key = await api.register("alice")
    families = await _scrape(api, **{"X-API-Key": ADMIN_KEY})
    assert "zhiyi_uptime_seconds" in families
    for headers, status in (({}, 401), ({"Authorization": "Bearer nope"}, 401), ({"Authorization": f"Basic {key}"}, 401),
                            ({"Authorization": f"Bearer {key}"}, 403), ({"X-API-Key": key}, 403)):
        resp = await api.client.get("/metrics", headers=headers)
        assert resp.status == status, headers
        assert_error(await resp.json())
