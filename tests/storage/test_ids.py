"""Time-ordered IDs: the generated-ID shape, strictly increasing, unique, clock-led."""

from __future__ import annotations

import time

import pytest

from maia.core import id_prefix, is_wire_id
from storage import new_ordered_id


def test_ordered_id_has_the_generated_id_shape() -> None:
    """An ordered ID is a generated ID (prefix, underscore, 32 hex) the wire accepts."""
    value = new_ordered_id("event")
    assert id_prefix(value) == "event"
    assert is_wire_id(value)


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
