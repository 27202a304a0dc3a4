"""Fire tables computed without cronsim: walk UTC minute by minute and read the local clock
(zoneinfo only), so the schedule under test is checked against an independent account."""

from __future__ import annotations

from datetime import UTC, date, datetime
from zoneinfo import ZoneInfo

NY, BERLIN = "America/New_York", "Europe/Berlin"
MINUTE = 60_000


def ms(text: str) -> int:
    """Milliseconds of a UTC ISO time written as `2026-03-08T07:00`."""
    return int(datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp() * 1000)


def wall_minutes(zone: str, start_ms: int, end_ms: int) -> list[tuple[int, datetime]]:
    """Every UTC minute in [start, end) with the local wall time it shows."""
    tz = ZoneInfo(zone)
    return [
        (at, datetime.fromtimestamp(at / 1000, tz=UTC).astimezone(tz))
        for at in range(start_ms, end_ms, MINUTE)
    ]


def expected_fixed(zone: str, hour: int, minute: int, start_ms: int, end_ms: int) -> list[int]:
    """Debian cron for a fixed local time: the first occurrence each day; on a day the time
    does not exist, the first instant after the jump (the first minute past it)."""
    fires: dict[date, int] = {}
    seen: set[date] = set()
    minutes = wall_minutes(zone, start_ms, end_ms)
    for index, (at, local) in enumerate(minutes):
        day = local.date()
        seen.add(day)
        if day in fires:
            continue
        if (local.hour, local.minute) == (hour, minute):
            fires[day] = at
        elif index and minutes[index - 1][1].date() == day:
            before = minutes[index - 1][1]
            wanted = before.replace(hour=hour, minute=minute, tzinfo=None)
            # the wall clock jumped over the wanted time between two real minutes
            if before.replace(tzinfo=None) < wanted < local.replace(tzinfo=None):
                fires[day] = at
    return sorted(fires.values())


def expected_hourly(zone: str, minute: int, start_ms: int, end_ms: int) -> list[int]:
    """An hour-wildcard schedule fires on every wall-clock occurrence of its minute."""
    return [at for at, local in wall_minutes(zone, start_ms, end_ms) if local.minute == minute]
