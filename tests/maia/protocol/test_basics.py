"""IDs, timestamps, revisions, digests, errors and clocks of `maia.protocol`."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from maia.core import (
    ERROR_CODES,
    GENERATED_ID_PATTERN,
    FakeClock,
    MaiaError,
    SystemClock,
    check_revision,
    check_wire_id,
    digest_bytes,
    digest_json,
    format_timestamp_ms,
    id_prefix,
    is_wire_id,
    new_id,
    parse_timestamp,
)


def test_new_id_has_prefix_and_128_bits() -> None:
    """Generated IDs are `<prefix>_<32 lowercase hex>`, distinct, and valid on the wire."""
    ids = {new_id("session") for _ in range(100)}
    assert len(ids) == 100
    for value in ids:
        assert re.match(GENERATED_ID_PATTERN, value)
        assert is_wire_id(value)
        assert id_prefix(value) == "session"


def test_new_id_refuses_unknown_prefix() -> None:
    """An unknown prefix is our bug and raises ValueError."""
    with pytest.raises(ValueError, match="unknown ID prefix"):
        new_id("bogus")


@pytest.mark.parametrize("value", ["", "-a", ".x", "a b", "a/b", "x" * 129, "é"])
def test_wire_id_refusals(value: str) -> None:
    """The wire grammar refuses empty, badly led, spaced, slashed, long and non-ASCII IDs."""
    assert not is_wire_id(value)
    with pytest.raises(MaiaError) as caught:
        check_wire_id(value, "sessionId")
    assert caught.value.code == "validation_failed"
    assert "sessionId" in caught.value.message


@pytest.mark.parametrize("value", ["a", "A9", "x" * 128, "a.b:c-d_e"])
def test_wire_id_accepts(value: str) -> None:
    """Identifiers of 1-128 characters of the grammar are accepted."""
    assert check_wire_id(value) == value


@given(st.integers(min_value=0, max_value=253402300799999))
def test_timestamp_round_trip(epoch_ms: int) -> None:
    """Every ms reading up to year 9999 formats to RFC 3339 ms UTC and parses back."""
    text = format_timestamp_ms(epoch_ms)
    assert text.endswith("Z")
    assert len(text) == 24
    assert parse_timestamp(text) == epoch_ms


@pytest.mark.parametrize(
    "text",
    ["2026-11-30T01:02:03Z", "2026-11-30T01:02:03.004+00:00", "2026-02-30T00:00:00.000Z", "x"],
)
def test_timestamp_refusals(text: str) -> None:
    """No ms, an offset, an impossible date or garbage are refused naming the field."""
    with pytest.raises(MaiaError, match="createdAt"):
        parse_timestamp(text, "createdAt")


@pytest.mark.parametrize("value", [0, -1, 2**53, True, 1.0, "1"])
def test_revision_refusals(value: object) -> None:
    """Revisions are positive safe integers: zero, negatives, 2^53, bools, floats refused."""
    with pytest.raises(MaiaError):
        check_revision(value)


def test_revision_accepts_bounds() -> None:
    """1 and 2^53 - 1 are revisions."""
    assert check_revision(1) == 1
    assert check_revision(2**53 - 1) == 2**53 - 1


def test_digest_shapes() -> None:
    """Digests are `sha256:` + 64 lowercase hex; JSON key order does not matter."""
    assert digest_bytes(b"") == (
        "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    )
    assert digest_json({"b": 1, "a": [True, None]}) == digest_json({"a": [True, None], "b": 1})
    assert digest_json({"a": "1"}) != digest_json({"a": 1})


def test_digest_refuses_floats_and_unsafe_integers() -> None:
    """Floats and integers beyond 2^53 have no canonical form here: use strings."""
    with pytest.raises(ValueError, match="floats"):
        digest_json({"x": [1.5]})
    with pytest.raises(ValueError, match="integer"):
        digest_json({"x": 2**53})


def test_error_codes_are_closed_and_wire_shaped() -> None:
    """A MaiaError carries a known code and its status and retryable flag on the wire."""
    error = MaiaError("turn_queue_full", "full", {"limit": 8})
    assert error.status == 429
    assert error.to_wire() == {
        "code": "turn_queue_full",
        "message": "full",
        "retryable": False,
        "details": {"limit": 8},
    }
    assert ERROR_CODES["saturated"].retryable
    with pytest.raises(ValueError, match="unknown error code"):
        MaiaError("not_a_code", "x")


def test_fake_clock_moves_only_when_told() -> None:
    """FakeClock readings stay put until advanced; a wall step leaves monotonic alone."""
    clock = FakeClock()
    before = (clock.wall_ms(), clock.monotonic_ms())
    clock.advance(250)
    assert (clock.wall_ms(), clock.monotonic_ms()) == (before[0] + 250, before[1] + 250)
    clock.step_wall(-10_000)
    assert clock.monotonic_ms() == before[1] + 250
    with pytest.raises(ValueError, match="does not go back"):
        clock.advance(-1)


def test_system_clock_is_monotonic_and_suspend_aware_on_linux() -> None:
    """The real clock's monotonic reading never goes back; on Linux it is CLOCK_BOOTTIME."""
    clock = SystemClock()
    readings = [clock.monotonic_ms() for _ in range(1000)]
    assert readings == sorted(readings)
    assert clock.suspend_aware
