"""A replica's outbox of buffered votes (replicas.outbox): durable across a reopen, one row per
Idempotency-Key (another body under the same key is refused), oldest first, done rows kept a day."""

from __future__ import annotations

import pytest

from commands.errors import IdempotencyKeyReused
from replicas.observed_clock import ObservedClock
from replicas.outbox import KEEP_DONE_MS, Outbox

OP = {"kind": "feedback", "agent_id": "alice", "memory_id": "m1", "verdict": "useful", "reason": "",
      "observed_at": "1:0:r"}


def test_votes_survive_a_reopen_in_order_and_leave_once_answered(tmp_path) -> None:
    box = Outbox(tmp_path)
    first = box.add(OP, agent_id="alice", now_ms=1000)
    second = box.add({**OP, "verdict": "not_useful"}, agent_id="alice", now_ms=1001)
    box.close()
    box = Outbox(tmp_path)
    assert [o["op_id"] for o in box.pending()] == [first.op_id, second.op_id]
    assert box.pending()[1]["verdict"] == "not_useful"
    box.done({first.op_id: "applied"}, now_ms=2000)
    assert [o["op_id"] for o in box.pending()] == [second.op_id]
    assert box.counts() == {"pending": 1, "done": 1}
    box.done({second.op_id: "rejected"}, now_ms=2000 + KEEP_DONE_MS + 1)   # the first is a day old: gone
    assert box.counts() == {"pending": 0, "done": 1}


def test_an_idempotency_key_buffers_once(tmp_path) -> None:
    box = Outbox(tmp_path)
    a = box.add(OP, agent_id="alice", now_ms=1, idem_key="k1", fingerprint="f1")
    again = box.add(OP, agent_id="alice", now_ms=2, idem_key="k1", fingerprint="f1")
    assert again.duplicate and again.op_id == a.op_id and len(box.pending()) == 1
    box.done({a.op_id: "applied"}, now_ms=3)                          # still answered the same once sent
    assert box.add(OP, agent_id="alice", now_ms=4, idem_key="k1", fingerprint="f1").duplicate
    with pytest.raises(IdempotencyKeyReused):
        box.add(OP, agent_id="alice", now_ms=5, idem_key="k1", fingerprint="other")
    assert not box.add(OP, agent_id="bob", now_ms=6, idem_key="k1", fingerprint="f1").duplicate   # per agent


def test_observed_stamps_never_go_back() -> None:
    clock = ObservedClock("rep-1")
    stamps = [clock.now(5000), clock.now(5000), clock.now(4000), clock.now(6000)]
    assert stamps == ["5000:0:rep-1", "5000:1:rep-1", "5000:2:rep-1", "6000:0:rep-1"]
