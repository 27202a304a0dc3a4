"""The fifteen named MN0 fixtures pass (each a test of its own)."""

from __future__ import annotations

import pytest

from simulations import FIXTURES, run_fixture

NAMES = [
    "lease-delayed-delivery",
    "lease-unmatched-grant",
    "lease-retry-anchor",
    "lease-replay",
    "lease-renewal-order",
    "lease-control-clock-step",
    "lease-shorter-renewal-lost",
    "lease-grant-response-lost",
    "lease-stale-report",
    "lease-suspend-resume",
    "lease-placement-validity",
    "restore-ordinary-lag",
    "restore-unilateral",
    "restore-matching",
    "restore-revoked-credential",
]


def test_the_fixture_set_is_the_spec_manifest() -> None:
    """Exactly the fifteen fixtures the spec names, no more, no fewer."""
    assert sorted(FIXTURES) == sorted(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_fixture_passes(name: str) -> None:
    """The named fixture's expectations all hold."""
    result = run_fixture(name)
    assert result.failures == ()
    assert result.passed
