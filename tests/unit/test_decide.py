from __future__ import annotations

import pytest

from commands.access import Actor
from commands.decide import decide_commit, decide_delete, decide_register
from commands.errors import Conflict, Forbidden, InvalidCommand, NotFound
from commands.model import CommitMemory, DeleteMemory, Limits, RegisterAgent
from commands.parsing import parse_batch, parse_commit, parse_delete, parse_register
from events.redis.indexes import AgentIndex, MemoryIndex

ALICE = Actor("alice", "alice-main", "alice-ephemeral")
LIMITS = Limits()


def commit(**kw) -> CommitMemory:
    return parse_commit({"content": "nginx listens on 8080", **kw}, LIMITS)


def test_register_defaults_namespaces_and_guards_absence():
    d = decide_register(RegisterAgent("hermes-a06", "hermes", "hermes-main"), None, None, None, "h")
    data = d.events[0].data
    assert (data.main_namespace, data.ephemeral_namespace) == ("hermes-main", "hermes-a06-ephemeral")
    assert len(d.guards) == 3 and all(g.expected is None for g in d.guards)
    d2 = decide_register(RegisterAgent("bob"), None, None, None, "h")
    assert d2.events[0].data.main_namespace == "bob-main"


def test_register_refuses_existing_agent_taken_namespace_and_shared():
    with pytest.raises(Conflict):
        decide_register(RegisterAgent("a"), AgentIndex("a", "a-main", "a-ephemeral", "", ""), None, None, "h")
    with pytest.raises(Conflict):
        decide_register(RegisterAgent("b", namespace="a-main"), None, "a", None, "h")
    with pytest.raises(InvalidCommand):
        decide_register(RegisterAgent("b", namespace="shared"), None, None, None, "h")


def test_commit_defaults_to_main_namespace_and_decay_class_from_category():
    ev = decide_commit(ALICE, commit(category="preference"), "m1", {})
    assert ev.type == "memory.committed" and ev.ns == "alice-main" and ev.agent == "alice"
    assert ev.data.decay_class == "user_pref" and ev.data.tier == "normal" and ev.data.source == "agent_inference"


def test_commit_into_shared_and_own_ephemeral_allowed_others_forbidden():
    assert decide_commit(ALICE, commit(namespace="shared"), "m", {}).ns == "shared"
    assert decide_commit(ALICE, commit(namespace="alice-ephemeral"), "m", {}).ns == "alice-ephemeral"
    with pytest.raises(Forbidden):
        decide_commit(ALICE, commit(namespace="bob-main"), "m", {})


def test_commit_checks_dependencies():
    known = {"d1": MemoryIndex("d1", 1, "shared", "bob", False),
             "gone": MemoryIndex("gone", 2, "alice-main", "alice", True),
             "secret": MemoryIndex("secret", 1, "bob-ephemeral", "bob", False)}
    assert decide_commit(ALICE, commit(depends_on=["d1"]), "m", known).data.depends_on == ("d1",)
    for dep in ("missing", "gone", "secret"):
        with pytest.raises(NotFound) as exc:
            decide_commit(ALICE, commit(depends_on=[dep]), "m", known)
        assert exc.value.code == "unknown_dependency"


def test_admin_acting_is_recorded():
    actor = Actor("alice", "alice-main", "alice-ephemeral", by="admin")
    assert decide_commit(actor, commit(), "m", {}).by == "admin"


def test_delete_rules():
    own = MemoryIndex("m", 3, "alice-main", "alice", False)
    d = decide_delete(ALICE, DeleteMemory("m"), own)
    # no expected version: the memory must live, and the append takes the next version (decided at 3)
    assert d.events[0].data.version == 4
    assert [(g.field, g.expected, g.next_version) for g in d.guards] == [("deleted", "0", False), ("version", "3", True)]
    d = decide_delete(ALICE, DeleteMemory("m", expected_version=3), own)
    assert [(g.field, g.expected, g.next_version) for g in d.guards] == [("version", "3", False)]
    with pytest.raises(Conflict):
        decide_delete(ALICE, DeleteMemory("m", expected_version=2), own)
    with pytest.raises(NotFound):
        decide_delete(ALICE, DeleteMemory("m"), None)
    with pytest.raises(Conflict) as deleted:  # already deleted: a version conflict with the current version
        decide_delete(ALICE, DeleteMemory("m"), MemoryIndex("m", 2, "alice-main", "alice", True))
    assert deleted.value.code == "version_conflict" and deleted.value.details["current_version"] == 2
    with pytest.raises(NotFound):  # others' ephemeral memories stay invisible, deleted or not
        decide_delete(ALICE, DeleteMemory("m"), MemoryIndex("m", 2, "bob-ephemeral", "bob", True))
    with pytest.raises(Forbidden):
        decide_delete(ALICE, DeleteMemory("m"), MemoryIndex("m", 1, "bob-main", "bob", False))
    with pytest.raises(NotFound):
        decide_delete(ALICE, DeleteMemory("m"), MemoryIndex("m", 1, "bob-ephemeral", "bob", False))
    assert decide_delete(ALICE, DeleteMemory("m"), MemoryIndex("m", 1, "shared", "bob", False)).events


@pytest.mark.parametrize("body, field", [
    ({}, "content"),
    ({"content": 5}, "content"),
    ({"content": "   "}, "content"),
    ({"content": "x" * 16001}, "content"),
    ({"content": "x", "category": "gossip"}, "category"),
    ({"content": "x", "decay_class": "forever"}, "decay_class"),
    ({"content": "x", "tier": "gold"}, "tier"),
    ({"content": "x", "tags": "a,b"}, "tags"),
    ({"content": "x", "tags": [1]}, "tags"),
    ({"content": "x", "tags": ["t"] * 33}, "tags"),
    ({"content": "x", "namespace": "bad ns"}, "namespace"),
    ({"content": "x", "depends_on": ["bad id!"]}, "depends_on"),
    ({"content": "x", "source": 3}, "source"),
    ({"content": "x", "derived_from": 7}, "derived_from"),
    ({"content": "x", "derived_from": ["chat-1"]}, "derived_from"),
    ({"content": "x", "derived_from": ""}, "derived_from"),
    ({"content": "x", "derived_from": " \u3000"}, "derived_from"),
    ({"content": "x", "derived_from": "chat\n1"}, "derived_from"),
    ({"content": "x", "derived_from": "c" * 129}, "derived_from"),
])
def test_parse_commit_rejects_bad_fields(body, field):
    with pytest.raises(InvalidCommand) as exc:
        parse_commit(body, LIMITS)
    assert exc.value.details["field"] == field


def test_derived_from_is_opaque_up_to_128_characters_and_reaches_the_event():
    for episode in ("c" * 128, "conv-26:session 3", "会话-7"):
        cmd = parse_commit({"content": "x", "derived_from": episode}, LIMITS)
        assert decide_commit(ALICE, cmd, "m", {}).data.derived_from == episode
    assert parse_commit({"content": "x"}, LIMITS).derived_from == ""


def test_parse_commit_accepts_chinese_and_dedups_tags():
    cmd = parse_commit({"content": "部署步骤依赖 nginx 配置", "tags": ["部署", "部署", "ops"]}, LIMITS)
    assert cmd.tags == ("部署", "ops") and cmd.category == "fact" and cmd.decay_class == "system_fact"


def test_parse_batch_validates_every_entry_and_limits():
    with pytest.raises(InvalidCommand) as exc:
        parse_batch({"entries": [{"content": "ok"}, {"content": ""}]}, LIMITS)
    assert exc.value.details["index"] == 1
    with pytest.raises(InvalidCommand):
        parse_batch({"entries": []}, LIMITS)
    with pytest.raises(InvalidCommand):
        parse_batch({"entries": [{"content": "x"}] * 1001}, LIMITS)
    assert len(parse_batch({"entries": [{"content": "x"}] * 1000}, LIMITS).entries) == 1000


def test_parse_register_and_delete():
    assert parse_register({"agent_id": "hermes-a06", "namespace": "hermes-main"}).namespace == "hermes-main"
    for bad in ({}, {"agent_id": ""}, {"agent_id": "a b"}, {"agent_id": 3}):
        with pytest.raises(InvalidCommand):
            parse_register(bad)
    assert parse_delete("m-1", {"expected_version": 2}).expected_version == 2
    for bad in ({"expected_version": "2"}, {"expected_version": 0}, {"expected_version": True}):
        with pytest.raises(InvalidCommand):
            parse_delete("m-1", bad)
