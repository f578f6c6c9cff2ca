"""zhiyi_client.positions: positions compare as integer pairs, and the read-your-writes mark only rises."""

from __future__ import annotations

import threading

import pytest

from zhiyi_client.positions import PositionTracker, is_after, is_position, later, position_key


def test_positions_compare_as_integer_pairs_not_strings():
    assert "999-0" > "1000-0"                                   # what string comparison would say
    assert position_key("999-0") < position_key("1000-0")
    assert position_key("1700000000000-9") < position_key("1700000000000-10")
    assert later("1700000000000-10", "1700000000000-9") == "1700000000000-10"
    assert later("999-5", "1000-0") == "1000-0"
    assert later(None, "5-0") == later("5-0", None) == "5-0" and later(None, None) is None
    assert is_after("5-1", "5-0") and not is_after("5-0", "5-0") and is_after("0-0", None)


@pytest.mark.parametrize("bad", ["", "1700000000000", "-1-0", "a-0", "1-0-0", " 1-0", "1-0\n"])
def test_malformed_positions_are_refused(bad):
    assert not is_position(bad)
    with pytest.raises(ValueError):
        position_key(bad)


def test_tracker_keeps_the_highest_position_and_ignores_what_is_not_one():
    tracker = PositionTracker()
    assert tracker.position is None
    for value in ("999-3", "1000-0", "999-9", None, "", 17, "garbage"):
        tracker.observe(value)
    assert tracker.position == "1000-0"


def test_tracker_is_safe_under_concurrent_writers():
    tracker = PositionTracker()

    def observe(start: int) -> None:
        for i in range(start, 2000, 4):
            tracker.observe(f"{i}-{i % 7}")

    threads = [threading.Thread(target=observe, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert tracker.position == "1999-4"
