"""A routine's schedule: a 5-field cron expression in an IANA time zone (cronsim + zoneinfo).

Daylight-saving time follows Debian cron, which cronsim implements and which this module
only guards (docs/routines.md, "Schedules and DST"):
  * a fixed local time that does not exist (02:30 on the spring-forward night) fires once,
    at the first instant after the jump (03:00 local);
  * a fixed local time that occurs twice (01:30 on the fall-back night) fires once, at its
    first occurrence;
  * a schedule whose hour is a wildcard (`30 * * * *`) fires on each wall-clock occurrence:
    twice in the repeated hour, not at all in the skipped one.
Every instant is integer milliseconds since the epoch (UTC); fires are strictly after the
instant asked about and strictly increasing, so a slot is a number that names itself.

The 15-minute rule is judged in real elapsed time between consecutive fires over a year from
the first fire, so a schedule that is fine on ordinary days but bunches up on a DST night
(`50 1,2 * * *` in New York fires 10 minutes apart on the spring-forward night) is refused.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from datetime import UTC, datetime
from itertools import pairwise
from typing import Final
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import attrs
from cronsim import CronSim, CronSimError

from maia.core import MaiaError, is_iana_time_zone

MIN_INTERVAL_MS: Final = 15 * 60 * 1000
INTERVAL_HORIZON_MS: Final = 366 * 24 * 3600 * 1000  # "the next year of fires"
MAX_CRON_LENGTH: Final = 128
MAX_TIMEZONE_LENGTH: Final = 64
# Catch-up after a long outage looks back at most this far (at the 15-minute minimum that is
# 1,344 slots); older passed-over slots are counted as omitted, not recorded one by one.
CATCH_UP_WINDOW_MS: Final = 14 * 24 * 3600 * 1000
# Fires farther ahead than this are "never" (cronsim itself gives up after 50 years).
_SEARCH_YEARS: Final = 50


def _invalid(detail: str, path: str) -> MaiaError:
    return MaiaError(
        "routine_schedule_invalid",
        f"schedule.{path}: {detail}",
        {"path": f"schedule.{path}", "detail": detail},
    )


def _zone(name: str) -> ZoneInfo:
    if not name or len(name) > MAX_TIMEZONE_LENGTH or name.startswith(("/", ".")):
        raise _invalid("must be an IANA time zone name such as Europe/Berlin", "timezone")
    if not is_iana_time_zone(name):  # ZoneInfo also opens localtime, posixrules, right/…
        raise _invalid(f"{name!r} is not an IANA time zone", "timezone")
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise _invalid(f"{name!r} is not an IANA time zone", "timezone") from None


@attrs.frozen
class Slot:
    """One fire of a schedule: the instant, and the local wall time it stands for."""

    at_ms: int
    local: str  # ISO local time with offset, e.g. 2026-03-08T03:00:00-04:00


@attrs.frozen
class Missed:
    """The slots a late claim passed over, newest last, bounded; `omitted` older ones exist."""

    slots: tuple[int, ...]
    omitted: bool


@attrs.frozen
class Schedule:
    """A checked schedule. Build it with `Schedule.parse`; never directly."""

    cron: str
    timezone: str
    zone: ZoneInfo = attrs.field(eq=False, repr=False)

    @classmethod
    def parse(cls, cron: str, timezone: str) -> Schedule:
        """A schedule from its wire fields.

        Raises `routine_schedule_invalid` naming `schedule.cron` or `schedule.timezone` for a
        cron that is not 5 fields cronsim accepts, one that never fires, or an unknown zone.
        """
        zone = _zone(timezone)
        text = " ".join(cron.split())
        if not text or len(cron) > MAX_CRON_LENGTH:
            raise _invalid(f"must be 1-{MAX_CRON_LENGTH} characters", "cron")
        if len(text.split(" ")) != 5:
            raise _invalid("must have exactly 5 fields: minute hour day month weekday", "cron")
        if text.startswith("@"):
            raise _invalid("nicknames such as @daily are not supported", "cron")
        try:
            CronSim(text, datetime(2000, 1, 1, tzinfo=zone))
        except (CronSimError, ValueError, KeyError, IndexError) as error:
            raise _invalid(str(error) or "cannot be parsed", "cron") from None
        return cls(text, timezone, zone)

    def _instants(self, after_ms: int) -> Iterator[int]:
        """Fires strictly after `after_ms`, strictly increasing (duplicates cronsim may give
        around a DST jump are dropped)."""
        start = datetime.fromtimestamp(after_ms / 1000, tz=UTC).astimezone(self.zone)
        last = after_ms
        limit = after_ms + _SEARCH_YEARS * 366 * 24 * 3600 * 1000
        try:
            for moment in CronSim(self.cron, start):
                at = int(moment.timestamp() * 1000)
                if at > limit:
                    return
                # cronsim works on naive local time for fixed-time schedules: starting inside
                # a repeated hour it can answer the hour's first occurrence, which is earlier.
                if at > last:
                    last = at
                    yield at
        except (StopIteration, CronSimError):
            return

    def next_after(self, after_ms: int) -> int | None:
        """The first fire strictly after `after_ms`, or None if it never fires again."""
        return next(self._instants(after_ms), None)

    def next_fires(self, after_ms: int, count: int) -> tuple[Slot, ...]:
        """The next `count` fires after `after_ms` (fewer if the schedule runs out)."""
        out: list[Slot] = []
        for at in self._instants(after_ms):
            if len(out) >= count:
                break
            out.append(Slot(at, self.local_text(at)))
        return tuple(out)

    def local_text(self, at_ms: int) -> str:
        """The local wall time of an instant in the schedule's zone, ISO with offset."""
        return datetime.fromtimestamp(at_ms / 1000, tz=UTC).astimezone(self.zone).isoformat()

    def check_interval(self, from_ms: int) -> None:
        """Refuse fires under 15 minutes apart in real time over a year from the first fire.

        Raises `routine_interval_too_short` naming the first offending pair, and
        `routine_schedule_invalid` when the schedule never fires after `from_ms`.

        Walking every fire of a year is ~35,000 steps for `*/15` (over a second of CPU on
        each preview and confirm), so a schedule whose local times of day are provably 15
        minutes apart only walks the days around the zone's offset changes, the one place
        real time and wall time part; any other schedule, and every refusal, walks it all.
        """
        first = self.next_after(from_ms)
        if first is None:
            raise _invalid("never fires", "cron")
        # The year is the schedule's first year of fires, not the calendar year from now: a
        # leap-day schedule (`* 3 29 2 *`) fires first in up to four years, and its fires
        # must be judged whatever day it was created on.
        horizon = first + INTERVAL_HORIZON_MS
        if _day_gaps_at_least(self.cron, MIN_INTERVAL_MS // 60_000):
            windows = _offset_change_windows(self.zone, first - 1, horizon)
            if all(self._gaps_fine(start, end) for start, end in windows):
                return
        self._check_walk(from_ms, horizon)

    def _gaps_fine(self, start_ms: int, end_ms: int) -> bool:
        """Whether consecutive fires in `(start_ms, end_ms]` are all 15 minutes apart."""
        previous: int | None = None
        for at in self._instants(start_ms):
            if at > end_ms:
                return True
            if previous is not None and at - previous < MIN_INTERVAL_MS:
                return False
            previous = at
        return True

    def _check_walk(self, from_ms: int, horizon: int) -> None:
        previous: int | None = None
        for at in self._instants(from_ms):
            if previous is not None and at - previous < MIN_INTERVAL_MS:
                raise MaiaError(
                    "routine_interval_too_short",
                    f"schedule.cron: fires at {self.local_text(previous)} and "
                    f"{self.local_text(at)} are {(at - previous) // 60_000} minutes apart; "
                    "consecutive fires must be at least 15 minutes apart",
                    {"path": "schedule.cron", "first": previous, "second": at},
                )
            if at > horizon:
                return
            previous = at

    def missed_between(self, after_ms: int, until_ms: int, limit: int) -> Missed:
        """The fires in `(after_ms, until_ms]`, at most the newest `limit`, oldest first.

        The scan is bounded: it looks back at most `CATCH_UP_WINDOW_MS` from `until_ms`.
        """
        start = max(after_ms, until_ms - CATCH_UP_WINDOW_MS)
        first = self.next_after(after_ms) if start > after_ms else None
        omitted = first is not None and first <= start
        newest: deque[int] = deque(maxlen=limit)
        seen = 0
        for at in self._instants(start):
            if at > until_ms:
                break
            newest.append(at)
            seen += 1
        return Missed(tuple(newest), omitted or seen > len(newest))


_DAY_MINUTES: Final = 24 * 60
_OFFSET_STEP_MS: Final = 6 * 3600 * 1000  # no zone changes its offset twice in 6 hours
_DAY_MS: Final = 24 * 3600 * 1000


def _day_gaps_at_least(cron: str, minutes: int) -> bool:
    """Whether the cron's local times of day are `minutes` apart round the clock.

    Days and weekdays only remove fires, so consecutive fires on one steady offset are at
    least the smallest gap between the times of day, the midnight wrap included.
    """
    sim = CronSim(cron, datetime(2000, 1, 1, tzinfo=UTC))
    times = sorted(h * 60 + m for h in sim.hours for m in sim.minutes)
    if len(times) < 2:
        return True
    gaps = [b - a for a, b in pairwise(times)]
    gaps.append(_DAY_MINUTES - times[-1] + times[0])
    return min(gaps) >= minutes


def _offset_change_windows(zone: ZoneInfo, from_ms: int, until_ms: int) -> list[tuple[int, int]]:
    """Spans a day either side of each change of the zone's UTC offset, merged when close."""
    windows: list[tuple[int, int]] = []
    at = from_ms
    offset = _offset(zone, at)
    while at < until_ms + _OFFSET_STEP_MS:
        step = at + _OFFSET_STEP_MS
        following = _offset(zone, step)
        if following != offset:
            start, end = at - _DAY_MS, step + _DAY_MS
            if windows and start <= windows[-1][1]:
                start = windows.pop()[0]
            windows.append((max(start, from_ms), end))
        at, offset = step, following
    return windows


def _offset(zone: ZoneInfo, at_ms: int) -> object:
    return datetime.fromtimestamp(at_ms / 1000, tz=UTC).astimezone(zone).utcoffset()
