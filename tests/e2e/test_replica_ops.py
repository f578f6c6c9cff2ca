"""The primary's side of LAN replicas through the real app: replica keys, the operations endpoint
(exactly once, origin = the replica, votes ordered by when the replica observed them), its
heartbeat in /api/v1/instances, and every bad input answered 4xx with nothing appended."""

from __future__ import annotations

from events.hlc import HLC
from tests.e2e.conftest import ADMIN_KEY, assert_error
from tests.e2e.test_feedback import _commit, _versions


async def _replica(api, instance_id: str = "rep-1") -> str:
    status, body = await api.call("POST", "/api/v1/admin/replicas", json={"instance_id": instance_id})
    assert status == 201, body
    assert body["instance_id"] == instance_id and body["replica_key"].startswith("zrk_")
    return body["replica_key"]


async def _ops(api, key: str, ops: list, instance_id: str = "rep-1", **extra):
    return await api.call("POST", f"/api/v1/replicas/{instance_id}/ops", key, json={"ops": ops, **extra})


def _stamp(wall_ms: int, node: str = "rep-1") -> str:
    return str(HLC(wall_ms, 0, node))


async def test_a_replica_key_authenticates_its_own_ops_route_only(api):
    key = await _replica(api)
    agent_key = await api.register("alice")
    for bad in (None, "zrk_wrong", agent_key, ADMIN_KEY):
        status, body = await _ops(api, bad, [])
        assert status == 401, (bad, body)
        assert_error(body, "unauthorized")
    status, body = await _ops(api, key, [], instance_id="rep-2")      # another replica's route
    assert status == 401
    status, body = await api.call("GET", "/api/v1/stats", key)         # not an agent or admin key anywhere else
    assert status == 401
    new_key = await _replica(api)                                      # a new key revokes the old one
    assert (await _ops(api, key, []))[0] == 401
    status, body = await _ops(api, new_key, [])
    assert status == 200 and body["results"] == []
    status, body = await api.call("POST", "/api/v1/admin/replicas", agent_key, json={})
    assert status == 403
    status, body = await api.call("POST", "/api/v1/admin/replicas", json={})   # an id is made up
    assert status == 201 and len(body["instance_id"]) == 36


async def test_buffered_votes_apply_once_and_order_by_when_the_replica_saw_them(api):
    rkey = await _replica(api)
    key = await api.register("alice")
    memory_id, _ = await _commit(api, key, "The staging database is pg-stage-3")
    # a vote given to the primary now ...
    status, direct = await api.call("POST", "/api/v1/feedback/not-useful", key, json={"memory_id": memory_id})
    assert status == 201
    direct_ms = HLC.parse((await _event_at(api, direct["position"])).hlc).wall_ms
    # ... and one the replica buffered a minute earlier, arriving later: the direct one still wins
    early = {"op_id": "fb-1", "kind": "feedback", "agent_id": "alice", "memory_id": memory_id, "verdict": "useful",
             "observed_at": _stamp(direct_ms - 60_000)}
    status, body = await _ops(api, rkey, [early])
    assert status == 200 and body["results"][0]["status"] == "applied", body
    status, again = await _ops(api, rkey, [early])                     # resent after a lost answer
    assert again["results"][0] == {"op_id": "fb-1", "status": "duplicate", "position": body["results"][0]["position"]}
    view = await _versions(api, key, memory_id, await api.settle())
    assert (view["useful_count"], view["not_useful_count"]) == (0, 1)
    event = await _event_at(api, body["results"][0]["position"])
    assert event.origin == "rep-1" and event.data.observed_at == early["observed_at"]
    # a later one from the replica wins over the direct vote
    late = {**early, "op_id": "fb-2", "observed_at": _stamp(direct_ms + 60_000)}
    status, body = await _ops(api, rkey, [late])
    assert body["results"][0]["status"] == "applied"
    view = await _versions(api, key, memory_id, await api.settle())
    assert (view["useful_count"], view["not_useful_count"]) == (1, 0)
    assert await api.count_events("memory.feedback") == 3


async def test_a_vote_the_primary_cannot_take_is_rejected_not_retried(api):
    rkey = await _replica(api)
    key = await api.register("alice")
    memory_id, _ = await _commit(api, key, "The VPN gateway is vpn-2.corp")
    status, _ = await api.call("DELETE", f"/api/v1/distilled/{memory_id}", key, json={})
    assert status == 200
    ops = [{"op_id": "gone", "kind": "feedback", "agent_id": "alice", "memory_id": memory_id, "verdict": "useful",
            "observed_at": _stamp(1_800_000_000_000)},
           {"op_id": "nobody", "kind": "feedback", "agent_id": "nobody", "memory_id": memory_id,
            "verdict": "useful", "observed_at": _stamp(1_800_000_000_000)}]
    status, body = await _ops(api, rkey, ops)
    assert status == 200
    assert [(r["status"], r["error"]["code"]) for r in body["results"]] == [("rejected", "not_found"),
                                                                            ("rejected", "unknown_agent")]


async def test_recall_audits_count_under_the_replica_origin(api):
    rkey = await _replica(api)
    key = await api.register("alice")
    memory_id, _ = await _commit(api, key, "Backups run at 02:00 UTC")
    audit = {"ns": "alice-main", "agent": "alice", "by": "",
             "data": {"query": "when do backups run", "namespaces": ["alice-main"], "result_ids": [memory_id],
                      "scores": [0.8], "top_k": 5}}
    op = {"op_id": "rep-1:batch-1", "kind": "recall_served", "events": [audit, audit]}
    for _ in range(2):
        status, body = await _ops(api, rkey, [op])
        assert status == 200
    assert body["results"][0]["status"] == "duplicate"
    view = await _versions(api, key, memory_id, await api.settle())
    assert view["recall_count"] == 2


async def test_the_heartbeat_lists_the_replica_in_instances(api):
    rkey = await _replica(api)
    status, body = await _ops(api, rkey, [], status={"position": None, "lag_events": 3, "lag_ms": 40,
                                                      "url": "http://10.0.0.7:7821", "version": "0.1.0",
                                                      "link": "up"})
    assert status == 200, body
    status, body = await api.call("GET", "/api/v1/instances")
    replica = next(i for i in body["instances"] if i["role"] == "replica")
    assert replica["instance_id"] == "rep-1" and replica["status"] == "up" and replica["url"] == "http://10.0.0.7:7821"


async def test_bad_operations_answer_400_and_append_nothing(api):
    rkey = await _replica(api)
    await api.register("alice")
    before = await api.log_length()
    good = {"op_id": "ok", "kind": "feedback", "agent_id": "alice", "memory_id": "m-1", "verdict": "useful",
            "observed_at": _stamp(1_800_000_000_000)}
    cases = [
        ({"ops": "x"}, "invalid_request"),
        ({"ops": [good, {**good}]}, "invalid_request"),                          # the same op_id twice
        ({"ops": [good, {**good, "op_id": "b", "verdict": "maybe"}]}, "invalid_request"),
        ({"ops": [{**good, "observed_at": "yesterday"}]}, "invalid_request"),
        ({"ops": [{**good, "kind": "commit"}]}, "invalid_request"),
        ({"ops": [{**good, "extra": 1}]}, "invalid_request"),
        ({"ops": [{"op_id": "a", "kind": "recall_served", "events": [{"data": {"query": 1}}]}]}, "invalid_request"),
        ({"ops": [], "status": {"lag": 1}}, "unknown_field"),
        ({"ops": [], "status": {"lag_ms": "slow"}}, "invalid_request"),
        ({"ops": [], "colour": "red"}, "unknown_field"),
        ({"ops": [good] * 501}, "invalid_request"),
    ]
    for body, code in cases:
        status, answer = await api.call("POST", "/api/v1/replicas/rep-1/ops", rkey, json=body)
        assert status == 400, (body, answer)
        assert_error(answer, code)
    status, answer = await api.call("POST", "/api/v1/admin/replicas", json={"instance_id": "bad id!"})
    assert status == 400
    assert_error(answer, "invalid_request")
    assert await api.log_length() == before


async def _event_at(api, position: str):
    from gateway.http.appkeys import STORE

    event = await api.client.app[STORE].get(position)
    assert event is not None
    return event
