"""Time-ordered IDs: the generated-ID shape, strictly increasing, unique, clock-led."""

from __future__ import annotations

import re
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from maia.core import ID_GRAMMAR_PATTERN, id_prefix, is_wire_id
from storage import new_ordered_id
from storage._ids import id_position, positioned_event_id, positioned_id


def test_ordered_id_has_the_generated_id_shape() -> None:
    """An ordered ID is a generated ID (prefix, 18 hex of time, 32 random) the wire accepts,
    and matches the spec's identifier grammar."""
    value = new_ordered_id("event")
    assert id_prefix(value) == "event"
    assert is_wire_id(value)
    assert re.fullmatch(ID_GRAMMAR_PATTERN, value)
    assert re.fullmatch(r"event_[0-9a-f]{50}", value)


def test_ordered_ids_carry_128_random_bits() -> None:
    """IDs made in the same millisecond differ in a 32-digit random tail (128 bits), not in
    a sequence alone: no two tails repeat, and every tail bit position takes both values."""
    tails = [new_ordered_id("receipt")[-32:] for _ in range(2000)]
    assert len(set(tails)) == len(tails)
    bits = [int(tail, 16) for tail in tails]
    ones = 0
    zeros = 0
    for value in bits:
        ones |= value
        zeros |= ~value & (2**128 - 1)
    assert ones == zeros == 2**128 - 1


def test_ids_minted_before_keep_their_shape() -> None:
    """Rows written before (32 hex: random IDs and the old ordered ones) stay valid IDs that
    sort before the IDs made now."""
    old_ordered = "event_0190a1b2c3d4000000a1b2c3d4e5f6a7"
    assert id_prefix(old_ordered) == "event"
    assert re.fullmatch(ID_GRAMMAR_PATTERN, old_ordered)
    assert old_ordered < new_ordered_id("event")


def test_ordered_ids_strictly_increase_and_do_not_repeat() -> None:
    """Within a process each ID sorts after the one before, in the same millisecond too."""
    made = [new_ordered_id("receipt") for _ in range(5000)]
    assert made == sorted(made)
    assert len(set(made)) == len(made)


def test_ordered_ids_follow_the_wall_clock_millisecond() -> None:
    """The first 12 hex digits are the millisecond the ID was made (never before it)."""
    before = time.time_ns() // 1_000_000
    value = new_ordered_id("event")
    after = time.time_ns() // 1_000_000
    assert before <= int(value.split("_")[1][:12], 16) <= after + 1


def test_unknown_prefix_is_refused() -> None:
    """A prefix outside the protocol's set raises ValueError, as new_id does."""
    with pytest.raises(ValueError, match="unknown ID prefix"):
        new_ordered_id("nope")


@settings(max_examples=200, derandomize=True, deadline=None)
@given(position=st.integers(min_value=-5, max_value=16**17 + 5))
def test_an_events_positioned_id_is_positioned_ids(position: int) -> None:
    """`positioned_event_id` (an append's) gives `positioned_id("event", …)`'s shape and
    position, and refuses the same positions with the same error."""
    try:
        expected = positioned_id("event", position)
    except ValueError as error:
        with pytest.raises(ValueError, match=re.escape(str(error))):
            positioned_event_id(position)
        return
    made = positioned_event_id(position)
    assert made[:24] == expected[:24]
    assert len(made) == len(expected)
    assert id_position("event", made) == position
