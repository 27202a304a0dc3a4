"""Schedules and DST on fixed dates in America/New_York and Europe/Berlin, against tables
computed in the test without cronsim: walk UTC minute by minute and read the local clock."""

from __future__ import annotations

from collections import Counter

import pytest

from actors.routine import Schedule
from maia.core import MaiaError

from ._tables import BERLIN, MINUTE, NY, expected_fixed, expected_hourly, ms


def fires(schedule: Schedule, start_ms: int, end_ms: int) -> list[int]:
    out: list[int] = []
    at = schedule.next_after(start_ms - 1)
    while at is not None and at < end_ms:
        out.append(at)
        at = schedule.next_after(at)
    return out


@pytest.mark.parametrize(
    ("zone", "start", "end"),
    [
        (NY, "2026-03-01T00:00", "2026-03-15T00:00"),  # spring forward: Mar 8
        (NY, "2026-10-25T00:00", "2026-11-08T00:00"),  # fall back: Nov 1
        (BERLIN, "2026-03-22T00:00", "2026-04-05T00:00"),  # spring forward: Mar 29
        (BERLIN, "2026-10-18T00:00", "2026-11-01T00:00"),  # fall back: Oct 25
    ],
)
@pytest.mark.parametrize(("hour", "minute"), [(2, 30), (1, 30), (2, 0), (9, 0)])
def test_fixed_time_fires_once_a_day_across_dst(
    zone: str, start: str, end: str, hour: int, minute: int
) -> None:
    """A fixed local time fires once a day: skipped times at the jump, repeated ones first."""
    schedule = Schedule.parse(f"{minute} {hour} * * *", zone)
    got = fires(schedule, ms(start), ms(end))
    assert got == expected_fixed(zone, hour, minute, ms(start), ms(end))
    assert 13 <= len(got) <= 15  # one a local day of the two weeks


def test_new_york_named_instants() -> None:
    """02:30 on Mar 8 fires at 03:00 EDT; 01:30 on Nov 1 fires once, at EDT (05:30Z)."""
    spring = Schedule.parse("30 2 * * *", NY)
    assert spring.next_after(ms("2026-03-08T05:00")) == ms("2026-03-08T07:00")
    assert spring.local_text(ms("2026-03-08T07:00")) == "2026-03-08T03:00:00-04:00"
    autumn = Schedule.parse("30 1 * * *", NY)
    first = autumn.next_after(ms("2026-11-01T04:00"))
    assert first == ms("2026-11-01T05:30")
    assert autumn.next_after(first) == ms("2026-11-02T06:30")  # not 06:30Z on Nov 1 (EST)


def test_berlin_named_instants() -> None:
    """02:30 on Mar 29 fires at 03:00 CEST; 02:30 on Oct 25 fires once, at CEST (00:30Z)."""
    spring = Schedule.parse("30 2 * * *", BERLIN)
    assert spring.next_after(ms("2026-03-28T23:00")) == ms("2026-03-29T01:00")
    autumn = Schedule.parse("30 2 * * *", BERLIN)
    first = autumn.next_after(ms("2026-10-24T23:00"))
    assert first == ms("2026-10-25T00:30")
    assert autumn.next_after(first) == ms("2026-10-26T01:30")


def test_asked_inside_the_repeated_hour_never_answers_the_past() -> None:
    """Asked during the second 01:xx of Nov 1, a 01:30 schedule answers the next day."""
    schedule = Schedule.parse("30 1 * * *", NY)
    inside_second = ms("2026-11-01T06:10")  # 01:10 EST, after 01:30 EDT already passed
    assert schedule.next_after(inside_second) == ms("2026-11-02T06:30")


@pytest.mark.parametrize(
    ("zone", "start", "end", "dst_day", "count"),
    [
        (NY, "2026-03-07T00:00", "2026-03-10T00:00", "2026-03-08", 23),
        (NY, "2026-10-31T00:00", "2026-11-03T00:00", "2026-11-01", 25),
        (BERLIN, "2026-03-28T00:00", "2026-03-31T00:00", "2026-03-29", 23),
        (BERLIN, "2026-10-24T00:00", "2026-10-27T00:00", "2026-10-25", 25),
    ],
)
def test_hour_wildcard_fires_on_each_wall_clock_occurrence(
    zone: str, start: str, end: str, dst_day: str, count: int
) -> None:
    """`30 * * * *` fires twice in a repeated hour and not in a skipped one."""
    schedule = Schedule.parse("30 * * * *", zone)
    got = fires(schedule, ms(start), ms(end))
    assert got == expected_hourly(zone, 30, ms(start), ms(end))
    per_day = Counter(schedule.local_text(at)[:10] for at in got)
    assert per_day[dst_day] == count


def test_fifteen_minute_rule_in_real_time_includes_dst_nights() -> None:
    """`50 1,2 * * *` is 70 minutes apart on paper but 10 in real time on Mar 8 in New York."""
    start = ms("2026-01-01T00:00")
    with pytest.raises(MaiaError) as caught:
        Schedule.parse("50 1,2 * * *", NY).check_interval(start)
    assert caught.value.code == "routine_interval_too_short"
    assert caught.value.details["second"] - caught.value.details["first"] == 10 * MINUTE
    Schedule.parse("50 1,2 * * *", "UTC").check_interval(start)  # no DST: fine


@pytest.mark.parametrize("cron", ["*/10 * * * *", "0,5 9 * * *", "* * * * *", "0,14 9 31 12 *"])
def test_under_fifteen_minutes_is_refused(cron: str) -> None:
    """Consecutive fires under 15 minutes apart, even once a year, are refused."""
    with pytest.raises(MaiaError) as caught:
        Schedule.parse(cron, BERLIN).check_interval(ms("2026-01-01T00:00"))
    assert caught.value.code == "routine_interval_too_short"


@pytest.mark.parametrize("cron", ["* 3 29 2 *", "0,5 0 29 2 *", "0,10 9 29 2 *"])
@pytest.mark.parametrize("created", ["2026-01-01T00:00", "2026-12-03T16:00", "2027-03-01T00:00"])
def test_leap_day_fires_are_judged_whenever_the_routine_is_created(cron: str, created: str) -> None:
    """A leap-day schedule's fires under 15 minutes apart are refused even when its first
    fire (29 Feb 2028) is more than a year after the day it is created."""
    with pytest.raises(MaiaError) as caught:
        Schedule.parse(cron, NY).check_interval(ms(created))
    assert caught.value.code == "routine_interval_too_short"
    assert caught.value.details["first"] >= ms("2028-02-29T00:00")


@pytest.mark.parametrize("cron", ["*/15 * * * *", "0 9 * * 1-5", "0 0 29 2 *", "0,15 9 * * *"])
def test_fifteen_minutes_or_more_is_accepted(cron: str) -> None:
    """Exactly 15 minutes, weekdays and leap days pass the one-year check."""
    Schedule.parse(cron, NY).check_interval(ms("2026-01-01T00:00"))


@pytest.mark.parametrize(
    ("cron", "zone", "path"),
    [
        ("0 9 * *", BERLIN, "schedule.cron"),
        ("0 0 9 * * *", BERLIN, "schedule.cron"),
        ("61 9 * * *", BERLIN, "schedule.cron"),
        ("@daily", BERLIN, "schedule.cron"),
        ("0 0 30 2 *", BERLIN, "schedule.cron"),
        ("", BERLIN, "schedule.cron"),
        ("0 9 * * *", "Mars/Olympus", "schedule.timezone"),
        ("0 9 * * *", "../etc/passwd", "schedule.timezone"),
        ("0 9 * * *", "", "schedule.timezone"),
        # Files ZoneInfo opens that name no IANA zone: the host's own, and leap-second copies.
        ("0 9 * * *", "localtime", "schedule.timezone"),
        ("0 9 * * *", "posixrules", "schedule.timezone"),
        ("0 9 * * *", "right/UTC", "schedule.timezone"),
    ],
)
def test_invalid_schedules_name_the_field(cron: str, zone: str, path: str) -> None:
    """A bad cron or zone is routine_schedule_invalid naming schedule.cron or .timezone."""
    with pytest.raises(MaiaError) as caught:
        Schedule.parse(cron, zone)
    assert caught.value.code == "routine_schedule_invalid"
    assert caught.value.details["path"] == path


def test_next_fires_and_local_text() -> None:
    """next_fires lists the next N slots with their local times, strictly increasing."""
    schedule = Schedule.parse("0 9 * * 1-5", BERLIN)
    slots = schedule.next_fires(ms("2026-12-04T12:00"), 3)  # a Friday
    assert [s.local for s in slots] == [
        "2026-12-07T09:00:00+01:00",
        "2026-12-08T09:00:00+01:00",
        "2026-12-09T09:00:00+01:00",
    ]


def test_missed_between_is_bounded_and_flags_omitted_slots() -> None:
    """The slots passed over are the newest `limit`; older ones are flagged, not listed."""
    schedule = Schedule.parse("0 * * * *", "UTC")
    few = schedule.missed_between(ms("2026-01-01T00:30"), ms("2026-01-01T05:00"), 10)
    assert few.slots == tuple(ms(f"2026-01-01T0{h}:00") for h in range(1, 6))
    assert not few.omitted
    many = schedule.missed_between(ms("2026-01-01T00:30"), ms("2026-01-03T00:00"), 4)
    assert many.slots == (
        *tuple(ms(f"2026-01-02T{h}:00") for h in (21, 22, 23)),
        ms("2026-01-03T00:00"),
    )
    assert many.omitted
    year = schedule.missed_between(ms("2025-01-01T00:00"), ms("2026-01-01T00:00"), 2)
    assert year.omitted
    assert len(year.slots) == 2
