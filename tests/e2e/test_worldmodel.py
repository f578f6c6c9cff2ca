"""The L3 world model (seed 6.6) through the real app: a constraint committed, a config parsed and a
deprecation update it (`worldmodel.updated`, pushed to every agent); entities and their interactions
come from the knowledge graph; another agent's ephemeral memories never enter it."""

from __future__ import annotations

from tests.e2e.push_client import listen
from tests.e2e.test_feedback import _commit


async def _model(api, key: str, after: str) -> dict:
    status, body = await api.call("GET", "/api/v1/l3/worldmodel", key, params={"after": after})
    assert status == 200, body
    return body


async def test_constraints_and_config_update_the_model_and_every_agent_is_told(api):
    alice, bob = await api.register("alice"), await api.register("bob")
    status, empty = await api.call("GET", "/api/v1/l3/worldmodel", bob)
    assert status == 200 and (empty["constraints"], empty["entities"], empty["updated_position"]) == ([], [], None)
    ears = [await listen(api.client, "alice", alice), await listen(api.client, "bob", bob)]
    await _commit(api, alice, "ComfyUI uses Redis for its job queue", namespace="shared")
    await _commit(api, alice, "Redis backs the ComfyUI queues on the GPU box", namespace="shared")
    await _commit(api, alice, "the staging root password is hunter2", namespace="alice-ephemeral",
                  category="constraint")
    hard, _ = await _commit(api, alice, "New services must not use ports 3000, 6379, 7821 or 8188",
                            category="constraint", namespace="shared")
    for ear in ears:                                   # pushed to every agent
        got = await ear.next("worldmodel.updated")
        assert got["data"]["reason"] == "memory.committed" and got["data"]["hard_constraints"] == 1
    await api.settle()
    model = await _model(api, bob, got["position"])
    assert model["constraints"] == [{"text": "New services must not use ports 3000, 6379, 7821 or 8188",
                                     "hard": True, "memory_id": hard, "namespace": "shared"}]
    names = {e["name"].lower() for e in model["entities"]}
    assert {"comfyui", "redis"} <= names, names                    # from the graph, above the PageRank floor
    pair = {e["id"] for e in model["entities"] if e["name"].lower() in ("comfyui", "redis")}
    assert any({i["source"], i["target"]} == pair and i["relation"] == "RELATES_TO" and i["weight"] == 2
               for i in model["interactions"]), model["interactions"]
    assert all("hunter2" not in c["text"] for c in model["constraints"])     # never an ephemeral memory
    # a config parsed: a soft constraint appears; then the hard one is deprecated and leaves the model
    soft, _ = await _commit(api, bob, "牧尘 prefers short answers", category="constraint", source="config_parse")
    got = await ears[1].next("worldmodel.updated")
    model = await _model(api, bob, got["position"])
    assert [(c["memory_id"], c["hard"]) for c in model["constraints"]] == [(soft, False), (hard, True)]
    status, _ = await api.call("POST", "/api/v1/feedback/deprecate", alice, json={"memory_id": hard,
                                                                                 "reason": "ports moved"})
    got = await ears[0].next("worldmodel.updated")
    assert got["data"]["reason"] == "memory.committed"            # alice heard of bob's config first
    got = await ears[0].next("worldmodel.updated")
    assert got["data"]["reason"] == "memory.deprecated"
    model = await _model(api, alice, got["position"])
    assert [c["memory_id"] for c in model["constraints"]] == [soft]
    for ear in ears:
        await ear.close()
    status, err = await api.call("GET", "/api/v1/l3/worldmodel", alice, params={"agent_id": "bob"})
    assert status == 403
