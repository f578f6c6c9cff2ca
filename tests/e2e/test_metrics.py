"""The metrics projection and `GET /api/v1/metrics/self` through the real app: commits, a recall hit
and a miss, feedback from three agents, a correction whose cascade marks its dependants stale, and a
forget run give the seed 3.2.3 figures of the day; replay folds the same."""

from __future__ import annotations

from tests.e2e.conftest import assert_error
from tests.e2e.test_feedback import _commit, _vote


async def test_the_days_self_metrics_from_real_activity(api):
    key = await api.register("alice")
    base, _ = await _commit(api, key, "The build cache lives on the NAS at /srv/cache")
    for i in range(2):
        await _commit(api, key, f"CI job {i} mounts the build cache", depends_on=[base])
    old, _ = await _commit(api, key, "The printer on floor 2 is an HP LaserJet")
    after = await api.settle()
    _, hit = await api.recall(key, "where is the build cache", cache=False, after=after)
    _, miss = await api.recall(key, "quantum chromodynamics lattice", min_score=0.99, cache=False)
    assert hit["results"] and not miss["results"]
    await _vote(api, base, useful=2, not_useful=1)
    status, _ = await api.call("POST", "/api/v1/feedback/correct", key, json={
        "memory_id": base, "content": "The build cache lives on the NAS at /srv/build-cache", "reason": "moved"})
    assert status == 200
    status, _ = await api.call("POST", "/api/v1/feedback/deprecate", key, json={"memory_id": old, "reason": "gone"})
    assert status == 200
    await api.settle()                                                                    # the cascade reacted
    status, run = await api.call("POST", "/api/v1/admin/forget", json={})
    assert status == 200 and run["count"] == 1
    last = await api.settle()
    status, body = await api.call("GET", "/api/v1/metrics/self", params={"days": 7, "after": last})
    assert status == 200, body
    counts = body["counts"]
    assert counts["commits"] == 4 and counts["recalls"] == 2 and counts["recall_misses"] == 1
    assert counts["useful"] == 2 and counts["not_useful"] == 1 and counts["corrections"] == 1
    assert counts["dependants_of_corrected"] == 2 and counts["cascades"] == 2 and counts["forgotten"] == 1
    m = {x["name"]: x for x in body["metrics"]}
    assert m["useful_rate"]["value"] == round(2 / 3, 4) and m["useful_rate"]["status"] == "warning"
    assert m["hit_rate"]["value"] == 0.5 and m["hit_rate"]["status"] == "warning"
    assert m["correction_propagation"]["value"] == 1.0 and m["correction_propagation"]["status"] == "healthy"
    assert m["junk_elimination"]["value"] == 1.0 and m["junk_elimination"]["status"] == "warning"
    assert m["loss_rate"]["value"] is None and "LLM" in m["loss_rate"]["reason"]
    assert m["gap_closure"]["status"] == "no_data"
    assert [t["day"] for t in m["hit_rate"]["trend"]][-1] == body["day"] and len(m["hit_rate"]["trend"]) == 7


async def test_metrics_self_is_admin_only_and_validates(api):
    key = await api.register("alice")
    status, body = await api.call("GET", "/api/v1/metrics/self", key)
    assert status == 403
    assert_error(body, "admin_required")
    for params in ({"days": "0"}, {"days": "91"}, {"days": "x"}, {"window": "7"}):
        status, body = await api.call("GET", "/api/v1/metrics/self", params=params)
        assert status == 400, params
        assert_error(body)
    status, body = await api.call("GET", "/api/v1/metrics/self")
    assert status == 200 and len(body["metrics"]) == 7 and len(body["metrics"][0]["trend"]) == 90
