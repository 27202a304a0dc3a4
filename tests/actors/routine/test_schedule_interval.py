"""The 15-minute rule's short cut (walk only the days around offset changes) against the
whole year's walk it stands in for: the same verdict and the same named pair, always."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.routine import Schedule
from maia.core import MaiaError

from ._tables import ms

ZONES = ["UTC", "America/New_York", "Europe/London", "Australia/Lord_Howe",
         "America/St_Johns", "Asia/Kolkata"]  # fmt: skip
YEAR_START = ms("2026-01-01T00:00")


def verdict(check: Any) -> dict[str, Any] | None:
    """None when the check passes, else the refusal's code and details."""
    try:
        check()
    except MaiaError as error:
        return {"code": error.code, **error.details}
    return None


def whole_walk(schedule: Schedule, from_ms: int) -> dict[str, Any] | None:
    def check() -> None:
        first = schedule.next_after(from_ms)
        if first is None:
            raise MaiaError("routine_schedule_invalid", "never fires", {})
        schedule._check_walk(from_ms, first + 366 * 24 * 3600 * 1000)

    return verdict(check)


def field(values: list[int]) -> str:
    return ",".join(str(v) for v in sorted(set(values)))


crons = st.builds(
    lambda minutes, hours, days: f"{minutes} {hours} {days} * *",
    st.lists(st.integers(0, 59), min_size=1, max_size=3).map(field),
    st.one_of(st.just("*"), st.lists(st.integers(0, 23), min_size=1, max_size=5).map(field)),
    st.sampled_from(["*", "*", "1-10", "*/3"]),
)


@settings(max_examples=30, deadline=None)
@given(cron=crons, zone=st.sampled_from(ZONES), day=st.integers(0, 364))
def test_short_cut_agrees_with_the_whole_walk(cron: str, zone: str, day: int) -> None:
    schedule = Schedule.parse(cron, zone)
    start = YEAR_START + day * 24 * 3600 * 1000
    expected = whole_walk(schedule, start)
    got = verdict(lambda: schedule.check_interval(start))
    if expected is not None and expected["code"] == "routine_schedule_invalid":
        assert got is not None
        assert got["code"] == "routine_schedule_invalid"
    else:
        assert got == expected


@pytest.mark.parametrize(
    ("cron", "zone"),
    [("*/15 * * * *", "Australia/Lord_Howe"), ("0,15,30,45 1,2 * * *", "America/New_York"),
     ("50 1,2 * * *", "America/New_York"), ("30 1,2 * * *", "Europe/London"),
     ("*/20 * * * *", "America/St_Johns"), ("40 0,1 * * *", "Australia/Lord_Howe")],
)  # fmt: skip
def test_dst_edges_agree(cron: str, zone: str) -> None:
    """Schedules whose spacing only DST nights decide: both checks say the same."""
    schedule = Schedule.parse(cron, zone)
    assert verdict(lambda: schedule.check_interval(YEAR_START)) == whole_walk(schedule, YEAR_START)


def test_every_fifteen_minutes_walks_only_the_dst_days(monkeypatch: pytest.MonkeyPatch) -> None:
    """`*/15` in New York: ~35,000 fires a year, a few hundred walked (two offset changes)."""
    walked = 0
    original = Schedule._instants

    def counting(self: Schedule, after_ms: int) -> Iterator[int]:
        nonlocal walked
        for at in original(self, after_ms):
            walked += 1
            yield at

    monkeypatch.setattr(Schedule, "_instants", counting)
    Schedule.parse("*/15 * * * *", "America/New_York").check_interval(YEAR_START)
    assert 0 < walked < 1_000
    walked = 0
    with pytest.raises(MaiaError):
        Schedule.parse("*/14 * * * *", "America/New_York").check_interval(YEAR_START)
    assert walked < 10  # a refusal still names the first pair, found at once
