"""Conflicts and merges through the HTTP API (seed 3.3.2, 6.2, plan E4.1): a contradicting commit answers
with `conflicts` and shows in GET /api/v1/conflicts; resolving by each strategy; isolation; a duplicate
merged by the dedup reaction and unmerged by the admin."""

from __future__ import annotations

import pytest

from commands.conflicts.judge import PairModel
from commands.reactions.dedup import DedupPolicy
from gateway.http.appkeys import RECALL, STORE
from tests.e2e.conftest import assert_error

PORT_A = "The ComfyUI web UI runs on port 8188"
PORT_B = "ComfyUI's web UI port is 8189"


async def _commit(api, key, content, **fields):
    status, body = await api.commit(key, content, **fields)
    assert status == 201, body
    await api.settle()
    return body


async def test_a_contradicting_commit_reports_the_conflict_and_lists_it(api):
    alice, bob = await api.register("alice"), await api.register("bob")
    first = await _commit(api, alice, PORT_A, namespace="shared", source="user_verbal")
    second = await _commit(api, bob, PORT_B, namespace="shared", source="config_parse")
    assert first["conflicts"] == []
    [found] = second["conflicts"]
    assert found["memory_id"] == first["memory_id"] and found["kind"] == "entity" and 0 < found["confidence"] <= 1
    # after= the commit's position: the conflict is there (one append)
    status, listed = await api.call("GET", "/api/v1/conflicts", alice, params={"after": second["position"]})
    assert status == 200 and listed["count"] == 1, listed
    c = listed["conflicts"][0]
    assert c["conflict_id"] == found["conflict_id"] and c["status"] == "open" and c["resolution"] is None
    assert c["memory_ids"] == [second["memory_id"], first["memory_id"]] and c["namespaces"] == ["shared", "shared"]
    assert "8188" in c["evidence"] and "8189" in c["evidence"]
    assert [(m["memory_id"], m["content"], m["agent_id"], m["source"]) for m in c["memories"]] == \
        [(second["memory_id"], PORT_B, "bob", "config_parse"), (first["memory_id"], PORT_A, "alice", "user_verbal")]
    # recall marks both memories
    status, rec = await api.recall(alice, "ComfyUI port", cache=False)
    assert status == 200
    warned = {r["memory_id"] for r in rec["results"] if any(w.startswith("conflict:") for w in r.get("warnings", []))}
    assert warned == {first["memory_id"], second["memory_id"]}

    # latest_wins: the older memory is deprecated with reason conflict:<id>
    status, done = await api.call("POST", "/api/v1/conflicts/resolve", bob,
                                  json={"conflict_id": c["conflict_id"], "strategy": "latest_wins"})
    assert status == 200, done
    assert (done["winner"], done["loser"]) == (second["memory_id"], first["memory_id"])
    status, versions = await api.call("GET", f"/api/v1/memory/{first['memory_id']}/versions", alice,
                                      params={"after": done["position"]})
    assert status == 200 and versions["status"] == "deprecated"
    assert f"conflict:{c['conflict_id']}" in versions["versions"][-1]["reason"]
    status, listed = await api.call("GET", "/api/v1/conflicts", alice, params={"after": done["position"]})
    assert status == 200 and listed["count"] == 0
    status, listed = await api.call("GET", "/api/v1/conflicts", alice, params={"status": "resolved"})
    assert listed["conflicts"][0]["resolution"]["strategy"] == "latest_wins"
    # settled once
    status, again = await api.call("POST", "/api/v1/conflicts/resolve", bob,
                                   json={"conflict_id": c["conflict_id"], "strategy": "keep_both"})
    assert status == 409, again
    assert_error(again)
    status, rec = await api.recall(alice, "ComfyUI port", cache=False)
    assert not any(w.startswith("conflict:") for r in rec["results"] for w in r.get("warnings", []))


async def _conflict(api, key_a, key_b, text_a, text_b, a=None, b=None):
    """A conflict no automatic rule settles: two sources whose trust differs by 0.25, committed together."""
    await _commit(api, key_a, text_a, namespace="shared", **{"source": "user_chat", **(a or {})})
    second = await _commit(api, key_b, text_b, namespace="shared", **{"source": "config_parse", **(b or {})})
    assert len(second["conflicts"]) == 1, second
    return second["conflicts"][0], second["memory_id"]


@pytest.mark.parametrize("settings_overrides", [{"conflict_auto_resolve": False}], indirect=True)
async def test_each_strategy(api):
    alice, bob = await api.register("alice"), await api.register("bob")
    resolve = "/api/v1/conflicts/resolve"
    c1, newer = await _conflict(api, alice, bob, "The NAS backup job runs at 02:00 every night",
                                "The NAS backup job runs nightly at 03:30")
    status, body = await api.call("POST", resolve, alice, json={"conflict_id": c1["conflict_id"], "strategy": "ask_user"})
    assert status == 400 and body["error"]["details"]["field"] == "winner"
    status, body = await api.call("POST", resolve, alice, json={"conflict_id": c1["conflict_id"],
                                                                 "strategy": "ask_user", "winner": c1["memory_id"]})
    assert status == 200 and (body["winner"], body["loser"]) == (c1["memory_id"], newer)

    c2, newer = await _conflict(api, alice, bob, "Grafana listens on port 3000 in the homelab",
                                "In the homelab Grafana listens on port 3300")
    status, body = await api.call("POST", resolve, bob, json={"conflict_id": c2["conflict_id"], "strategy": "keep_both"})
    assert status == 200 and (body["winner"], body["loser"]) == ("", "")

    c3, newer = await _conflict(api, alice, bob, "The staging database is Postgres 14",
                                "Staging runs Postgres 16 for its database")
    status, body = await api.call("POST", resolve, bob, json={"conflict_id": c3["conflict_id"], "strategy": "auto_merge"})
    assert status == 409, body  # different values: not safely mergeable
    status, body = await api.call("POST", resolve, bob, json={"conflict_id": c3["conflict_id"],
                                                               "strategy": "primary_wins"})
    assert status == 200 and body["winner"] == newer and body["loser"] == c3["memory_id"]

    # an importance conflict (the same fact, another tier, another agent) merges safely
    c4, newer = await _conflict(api, alice, bob, "The user is allergic to penicillin",
                                "The user is allergic to penicillin", a={"tier": "normal"}, b={"tier": "core"})
    assert c4["kind"] == "importance"
    status, body = await api.call("POST", resolve, bob, json={"conflict_id": c4["conflict_id"], "strategy": "auto_merge"})
    assert status == 200 and body["winner"] == newer, body
    status, stones = await api.call("GET", "/api/v1/admin/tombstones", params={"reason": "merged",
                                                                              "after": body["position"]})
    assert [t["original_id"] for t in stones["tombstones"]] == [c4["memory_id"]]

    # validation: unknown strategy, unknown field, unknown conflict
    status, body = await api.call("POST", resolve, bob, json={"conflict_id": c4["conflict_id"], "strategy": "x"})
    assert status == 400 and body["error"]["details"]["field"] == "strategy"
    status, body = await api.call("POST", resolve, bob, json={"conflict_id": "nope", "strategy": "keep_both"})
    assert status == 404, body
    status, body = await api.call("POST", resolve, bob, json={"conflict_id": "x", "strategy": "keep_both", "y": 1})
    assert status == 400 and body["error"]["code"] == "unknown_field"


async def test_conflicts_stay_in_their_namespaces(api):
    alice, carol = await api.register("alice"), await api.register("carol")
    await _commit(api, alice, PORT_A, namespace="alice-ephemeral", source="user_chat")
    second = await _commit(api, alice, PORT_B, namespace="alice-ephemeral", source="config_parse")
    assert len(second["conflicts"]) == 1
    status, mine = await api.call("GET", "/api/v1/conflicts", alice)
    assert status == 200 and mine["count"] == 1
    status, theirs = await api.call("GET", "/api/v1/conflicts", carol)
    assert status == 200 and theirs["count"] == 0
    status, body = await api.call("GET", "/api/v1/conflicts", carol, params={"namespace": "alice-ephemeral"})
    assert status == 403, body
    status, body = await api.call("POST", "/api/v1/conflicts/resolve", carol,
                                  json={"conflict_id": mine["conflicts"][0]["conflict_id"], "strategy": "latest_wins"})
    assert status == 404, body
    status, everything = await api.call("GET", "/api/v1/conflicts")   # the admin key sees every conflict
    assert status == 200 and everything["count"] == 1
    # carol's commit to shared is never compared with alice's ephemeral memories
    third = await _commit(api, carol, "ComfyUI listens on port 9000", namespace="shared")
    assert third["conflicts"] == []


async def test_a_batch_reports_each_entrys_conflicts_with_only_held_scopes_searched(api):
    """A batch into two scopes, one holding no memory (not searched) and one where an entry contradicts a
    stored memory: each entry's conflicts come back on that entry."""
    alice = await api.register("alice")
    first = await _commit(api, alice, PORT_A, namespace="shared", source="user_verbal")
    entries = [{"content": "The NAS backs up at 02:00", "namespace": "alice-main"},
               {"content": PORT_B, "namespace": "shared", "source": "config_parse"},
               {"content": "The router's admin port is 8443", "namespace": "alice-main"}]
    status, body = await api.call("POST", "/api/v1/batch-commit", alice, json={"entries": entries})
    assert status == 201, body
    assert [len(r["conflicts"]) for r in body["results"]] == [0, 1, 0]
    assert body["results"][1]["conflicts"][0]["memory_id"] == first["memory_id"]


@pytest.mark.parametrize("settings_overrides", [{"merge": True}], indirect=True)
async def test_a_duplicate_is_merged_and_unmerged(api):
    alice = await api.register("alice")
    for text in ("The home router is a UniFi Dream Machine", "Backups go to a Synology DS920+",
                 "The media server runs Jellyfin"):
        await _commit(api, alice, text)
    query = {"importance_weight": 0, "cache": False, "top_k": 10}
    first = await _commit(api, alice, "The user's NAS is a TrueNAS box with 4 x 8 TB disks")
    dup = await _commit(api, alice, "The user's NAS is a TrueNAS box with 4 x 8 TB disks.")
    status, rec = await api.recall(alice, "what NAS does the user have", **query)
    ids = [r["memory_id"] for r in rec["results"]]
    assert first["memory_id"] in ids and dup["memory_id"] not in ids   # merged into the first
    status, stones = await api.call("GET", "/api/v1/admin/tombstones", params={"reason": "merged"})
    [stone] = stones["tombstones"]
    assert (stone["original_id"], stone["merged_into"], stone["restored_at"]) == \
        (dup["memory_id"], first["memory_id"], "")
    status, versions = await api.call("GET", f"/api/v1/memory/{first['memory_id']}/versions", alice)
    assert any(f"absorbed {dup['memory_id']}" in v["reason"] for v in versions["versions"]), versions

    status, body = await api.call("POST", "/api/v1/admin/unmerge", alice, json={"memory_id": dup["memory_id"]})
    assert status == 403, body   # admin only
    status, body = await api.call("POST", "/api/v1/admin/unmerge", json={"memory_id": dup["memory_id"]})
    assert status == 200 and body["merged_into"] == first["memory_id"], body
    status, rec2 = await api.recall(alice, "what NAS does the user have", after=body["position"], **query)
    ids2 = [r["memory_id"] for r in rec2["results"]]
    assert dup["memory_id"] in ids2 and first["memory_id"] in ids2
    assert [i for i in ids2 if i != dup["memory_id"]] == ids
    status, stones = await api.call("GET", "/api/v1/admin/tombstones", params={"reason": "merged",
                                                                              "after": body["position"]})
    assert stones["tombstones"][0]["restored_at"] != ""
    status, again = await api.call("POST", "/api/v1/admin/unmerge", json={"memory_id": dup["memory_id"]})
    assert status == 409, again
    await api.settle()   # the unmerged duplicate is not merged again (the dedup reaction runs on commits only)
    status, rec3 = await api.recall(alice, "what NAS does the user have", **query)
    assert [r["memory_id"] for r in rec3["results"]] == ids2


async def test_the_rules_settle_what_they_can(api):
    alice, bob = await api.register("alice"), await api.register("bob")
    # trust: the user's own words (1.0) over an LLM's distillation (0.4)
    said = await _commit(api, alice, "The family car is a blue 2019 Honda Civic", namespace="shared",
                         source="user_verbal")
    guess = await _commit(api, bob, "The family car is a 2015 Toyota Corolla", namespace="shared",
                          source="llm_distill")
    [found] = guess["conflicts"]
    status, resolved = await api.call("GET", "/api/v1/conflicts", alice, params={"status": "resolved",
                                                                               "after": await api.settle()})
    [c] = resolved["conflicts"]
    assert c["conflict_id"] == found["conflict_id"] and c["resolution"]["rule"] == "trust_gap"
    assert (c["resolution"]["strategy"], c["resolution"]["winner"], c["resolution"]["loser"]) == \
        ("trust_wins", said["memory_id"], guess["memory_id"]) and c["resolution"]["resolved_by"] == "system"
    status, versions = await api.call("GET", f"/api/v1/memory/{guess['memory_id']}/versions", bob)
    assert versions["status"] == "deprecated"
    # the same source: the later one wins
    await _commit(api, alice, "The office Wi-Fi password is hunter2", namespace="shared", source="config_parse")
    later = await _commit(api, bob, "The office Wi-Fi password is swordfish9", namespace="shared",
                          source="config_parse")
    assert len(later["conflicts"]) == 1
    status, resolved = await api.call("GET", "/api/v1/conflicts", alice, params={"status": "resolved",
                                                                               "after": await api.settle()})
    rules = {c["resolution"]["rule"]: c["resolution"]["winner"] for c in resolved["conflicts"]}
    assert rules == {"trust_gap": said["memory_id"], "same_source": later["memory_id"]}
    status, still_open = await api.call("GET", "/api/v1/conflicts", alice)
    assert still_open["count"] == 0


async def test_peoples_verdicts_become_a_profile_that_settles_the_next_one(api):
    alice, bob = await api.register("alice"), await api.register("bob")
    pairs = [("The NAS backup job runs at 02:00 every night", "The NAS backup job runs nightly at 03:30"),
             ("Grafana listens on port 3000 in the homelab", "In the homelab Grafana listens on port 3300"),
             ("The staging database is Postgres 14", "Staging runs Postgres 16 for its database"),
             ("The ComfyUI web UI runs on port 8188", "The ComfyUI web UI runs on port 8189")]
    for text_a, text_b in pairs[:3]:   # user_chat vs config_parse: no rule applies, a person settles it
        c, newer = await _conflict(api, alice, bob, text_a, text_b)
        status, body = await api.call("POST", "/api/v1/conflicts/resolve", alice,
                                      json={"conflict_id": c["conflict_id"], "strategy": "ask_user", "winner": newer})
        assert status == 200, body
    c, newer = await _conflict(api, alice, bob, *pairs[3])
    status, listed = await api.call("GET", "/api/v1/conflicts", alice, params={"status": "resolved",
                                                                             "after": await api.settle()})
    verdict = next(x for x in listed["conflicts"] if x["conflict_id"] == c["conflict_id"])["resolution"]
    assert (verdict["rule"], verdict["strategy"], verdict["winner"]) == ("profile", "trust_wins", newer)


@pytest.fixture
def settings_overrides(request) -> dict:
    return getattr(request, "param", {})


@pytest.mark.parametrize("settings_overrides", [{"conflict_check": False, "merge": False}], indirect=True)
async def test_both_can_be_turned_off(api):
    alice, bob = await api.register("alice"), await api.register("bob")
    await _commit(api, alice, PORT_A, namespace="shared")
    second = await _commit(api, bob, PORT_B, namespace="shared")
    assert second["conflicts"] == []
    first = await _commit(api, alice, "The user's NAS is a TrueNAS box with 4 x 8 TB disks")
    dup = await _commit(api, alice, "The user's NAS is a TrueNAS box with 4 x 8 TB disks.")
    status, rec = await api.recall(alice, "what NAS does the user have", cache=False)
    assert {first["memory_id"], dup["memory_id"]} <= {r["memory_id"] for r in rec["results"]}
    assert await api.count_events("memory.merged") == 0 and await api.count_events("conflict.detected") == 0


@pytest.mark.parametrize("settings_overrides", [{"run_reactions": False}], indirect=True)
async def test_merge_then_unmerge_gives_the_recall_order_before_the_merge(api):
    """The dedup reaction is run by hand (this app runs no reactions), so the state before the merge can be read."""
    alice = await api.register("alice")
    for text in ("The NAS runs TrueNAS SCALE on a Ryzen 5600G", "NAS snapshots are kept for 30 days",
                 "The NAS shares media over SMB to the living-room TV", "The router forwards port 443 to the NAS",
                 "The user's NAS is a TrueNAS box with 4 x 8 TB disks"):
        await _commit(api, alice, text)
    dup = await _commit(api, alice, "The user's NAS is a TrueNAS box with 4 x 8 TB disks.")
    queries = ("what NAS does the user have", "NAS disks", "TrueNAS", "where do snapshots go")
    params = {"importance_weight": 0, "cache": False, "top_k": 10}

    async def order(after=None) -> list[list[str]]:
        out = []
        for q in queries:
            status, body = await api.recall(alice, q, **params, **({"after": after} if after else {}))
            assert status == 200, body
            out.append([r["memory_id"] for r in body["results"]])
        return out

    before = await order()
    assert any(dup["memory_id"] in ids for ids in before)
    app = api.client.app
    policy = DedupPolicy(app[RECALL], app[STORE], PairModel.load())
    follow = await policy.decide(await app[STORE].get(dup["position"]))
    assert [e.type for e in follow] == ["memory.merged"] and follow[0].data.memory_id == dup["memory_id"]
    merged = await app[STORE].append(follow)
    during = await order(merged.position)
    assert all(dup["memory_id"] not in ids for ids in during)
    status, body = await api.call("POST", "/api/v1/admin/unmerge", json={"memory_id": dup["memory_id"]})
    assert status == 200, body
    assert await order(body["position"]) == before


async def test_bad_input_gets_a_clear_error(api):
    alice = await api.register("alice")
    for params, field in (({"status": "closed"}, "status"), ({"namespace": "no spaces"}, "namespace"),
                          ({"limit": "0"}, "limit"), ({"offset": "-1"}, "offset"), ({"bogus": "1"}, "bogus")):
        status, body = await api.call("GET", "/api/v1/conflicts", alice, params=params)
        assert status == 400, (params, body)
        assert_error(body)
        assert body["error"]["details"].get("field") == field, body
    status, body = await api.call("GET", "/api/v1/conflicts")   # the admin key alone: every conflict
    assert status == 200 and body["count"] == 0
    resolve = "/api/v1/conflicts/resolve"
    for payload, field in (({"strategy": "keep_both"}, "conflict_id"), ({"conflict_id": "c"}, "strategy"),
                           ({"conflict_id": 7, "strategy": "keep_both"}, "conflict_id"),
                           ({"conflict_id": "x" * 65, "strategy": "keep_both"}, "conflict_id"),
                           ({"conflict_id": "c", "strategy": "keep_both", "winner": 3}, "winner")):
        status, body = await api.call("POST", resolve, alice, json=payload)
        assert status == 400, (payload, body)
        assert body["error"]["details"].get("field") == field, body
    status, body = await api.call("POST", resolve, json={"conflict_id": "c", "strategy": "keep_both"})
    assert status == 400 and body["error"]["code"] == "agent_id_required"
    for payload, expected in (({}, 400), ({"memory_id": 5}, 400), ({"memory_id": "../x"}, 400),
                              ({"memory_id": "0b6d3f4e-0000-4000-8000-000000000000"}, 404)):
        status, body = await api.call("POST", "/api/v1/admin/unmerge", json=payload)
        assert status == expected, (payload, body)
        assert_error(body)


async def test_a_distilled_memory_is_checked_too(api):
    alice, bob = await api.register("alice"), await api.register("bob")
    stored = await _commit(api, alice, "The NAS backup job runs at 02:00 every night", namespace="shared",
                           source="config_parse")
    status, body = await api.call("POST", "/api/v1/episodes", bob, json={
        "kind": "conversation", "namespace": "shared", "turns": [
            {"role": "user", "content": "The NAS backup job runs nightly at 03:30."},
            {"role": "assistant", "content": "Noted."}]})
    assert status == 201, body
    status, listed = await api.call("GET", "/api/v1/conflicts", alice, params={"status": "all",
                                                                             "after": await api.settle()})
    [c] = listed["conflicts"]
    assert c["memory_ids"][1] == stored["memory_id"] and c["detected_by"] == "system", c
    assert "03:30" in c["memories"][0]["content"]
