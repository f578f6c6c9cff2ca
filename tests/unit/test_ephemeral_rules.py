"""Which ephemeral memories expire or leave with their session (commands.rules.ephemeral)."""

from __future__ import annotations

from commands.rules.ephemeral import expired, of_session


def _row(memory_id: str, namespace: str, timestamp: str) -> dict:
    return {"id": memory_id, "namespace": namespace, "version": 1, "content": memory_id, "timestamp": timestamp}


ROWS = [_row("b", "a-ephemeral", "2026-12-01T10:00:00.000Z"), _row("a", "a-ephemeral", "2026-12-01T09:00:00.000Z"),
        _row("c", "a-main", "2026-11-01T00:00:00.000Z"), _row("d", "b-ephemeral", "2026-12-02T09:30:00.000Z")]
NOW = 1796205600000        # 2026-12-02T10:00:00Z


def test_only_old_ephemeral_memories_expire_oldest_first() -> None:
    due = expired(ROWS, NOW, 86_400)
    assert [(c.memory_id, c.reason) for c in due] == [("a", "ephemeral_expired"), ("b", "ephemeral_expired")]
    assert expired(ROWS, NOW, 0) == []                        # 0: never
    assert [c.memory_id for c in expired(ROWS, NOW, 600)] == ["a", "b", "d"]


def test_a_session_takes_its_live_members_only() -> None:
    assert [(c.memory_id, c.reason) for c in of_session(ROWS, ["d", "b", "gone"])] == [
        ("b", "session_closed"), ("d", "session_closed")]
