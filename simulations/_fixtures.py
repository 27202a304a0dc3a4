"""The fifteen named MN0 fixtures, by name, and how to run them."""

from __future__ import annotations

from ._duo import Expect, Fixture, FixtureResult
from ._fixtures_lease import LEASE_FIXTURES
from ._fixtures_restore import RESTORE_FIXTURES

FIXTURES: dict[str, Fixture] = {**LEASE_FIXTURES, **RESTORE_FIXTURES}


def run_fixture(name: str) -> FixtureResult:
    """Run one named fixture. Raises KeyError for an unknown name."""
    fixture = FIXTURES[name]
    expect = Expect()
    try:
        fixture(expect)
    except Exception as error:  # a fixture that crashes fails; it does not stop the others
        expect.failures.append(f"raised {type(error).__name__}: {error}")
    return FixtureResult(name, not expect.failures, tuple(expect.failures))


def run_fixtures() -> list[FixtureResult]:
    return [run_fixture(name) for name in FIXTURES]
