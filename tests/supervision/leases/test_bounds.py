"""The MN0 bounds and the relation the spec pins between them."""

from __future__ import annotations

import supervision.leases as leases


def test_credited_window_equals_four_missed_heartbeats() -> None:
    """27 - 5 - 2 = 20 = 5 x 4: an accepted grant outlasts four missed heartbeats."""
    window = leases.MIN_TTL_MS - leases.MAX_ROUND_TRIP_MS - leases.CLOCK_ERROR_BUDGET_MS
    assert (leases.MIN_TTL_MS, leases.MAX_ROUND_TRIP_MS, leases.CLOCK_ERROR_BUDGET_MS) == (
        27_000,
        5_000,
        2_000,
    )
    assert window == leases.CREDITED_WINDOW_MS == 20_000
    assert window == leases.HEARTBEAT_INTERVAL_MS * leases.HEARTBEAT_MISSES


def test_maximum_ttl_covers_the_spec_examples() -> None:
    """The chosen maximum TTL admits the spec's 30 s grant and is at least the minimum."""
    assert leases.MIN_TTL_MS <= 30_000 <= leases.MAX_TTL_MS == 60_000


def test_stop_bound_matches_the_item_10_example() -> None:
    """A deadline at t=28 with a stop that may run to t=38: a 10 s stop bound."""
    assert 28_000 + leases.STOP_BOUND_MS == 38_000


def test_every_public_name_is_exported_once() -> None:
    """The package re-exports each public name of its private modules exactly once."""
    import ast
    from pathlib import Path

    source = Path(leases.__file__).read_text()
    names = [
        alias.asname
        for node in ast.parse(source).body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    ]
    assert len(names) == len(set(names))
    assert {"node_step", "control_step", "parse_wire", "EvidenceSpool", "LeaseRules"} <= set(names)
