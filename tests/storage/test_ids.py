"""Time-ordered IDs: the generated-ID shape, increasing across milliseconds, unique."""

from __future__ import annotations

import time

import pytest

from maia.protocol import id_prefix, is_wire_id
from storage import new_ordered_id


def test_ordered_id_has_the_generated_id_shape() -> None:
    """An ordered ID is a generated ID (prefix, underscore, 32 hex) the wire accepts."""
    value = new_ordered_id("event")
    assert id_prefix(value) == "event"
    assert is_wire_id(value)


def test_ordered_ids_increase_across_milliseconds_and_do_not_repeat() -> None:
    """IDs made in later milliseconds sort after earlier ones; none repeats."""
    earlier = [new_ordered_id("receipt") for _ in range(1000)]
    deadline = time.monotonic() + 5.0
    start = time.time_ns() // 1_000_000
    while time.time_ns() // 1_000_000 <= start and time.monotonic() < deadline:
        time.sleep(0.001)
    later = new_ordered_id("receipt")
    assert all(value < later for value in earlier)
    assert len(set(earlier)) == len(earlier)


def test_unknown_prefix_is_refused() -> None:
    """A prefix outside the protocol's set raises ValueError, as new_id does."""
    with pytest.raises(ValueError, match="unknown ID prefix"):
        new_ordered_id("nope")
