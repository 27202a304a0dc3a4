"""The cron forms docs/routines.md ("What a field may hold") lists: each accepted example
fires on the dates it says, each refused one is routine_schedule_invalid naming
schedule.cron, and every example is in the doc (so the two cannot drift apart)."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.routine import Schedule
from maia.core import MaiaError

DOC = Path(__file__).parents[2] / "docs" / "routines.md"
NEW_YEAR = 1_767_225_600_000  # 2026-01-01T00:00:00Z, a Thursday

ACCEPTED = {
    "0 9 1 JAN,jul *": ["2026-01-01", "2026-07-01"],
    "0 9 * * MON-FRI": ["2026-01-01", "2026-01-02", "2026-01-05"],
    "0 9 * * sun": ["2026-01-04", "2026-01-11"],
    "0 9 * * 7": ["2026-01-04", "2026-01-11"],
    "0 9 L * *": ["2026-01-31", "2026-02-28"],
    "0 9 LW * *": ["2026-01-30", "2026-02-27"],
    "0 9 * * 5L": ["2026-01-30", "2026-02-27"],
    "0 9 * * 1#2": ["2026-01-12", "2026-02-09"],
    "0 9 * * MON#1": ["2026-01-05", "2026-02-02"],
    "0 9 * * 5#5": ["2026-01-30", "2026-05-29"],  # the doc names it `5#5`
    "0 9 13 * 5": ["2026-01-02", "2026-01-09", "2026-01-13", "2026-01-16"],
    "0 0 29 2 *": ["2028-02-29", "2032-02-29"],
}
# each refused form, and how the doc names it
REFUSED = {"@daily": "@daily", "@hourly": "@hourly", "@reboot": "@reboot",
           "0 0 9 * * *": "a 6th field", "0 9 ? * *": "`?`", "0 9 15W * *": "`15W`",
           "0 9 L-2 * *": "`L-2`", "0 9 * * L": "`L` alone in the weekday field",
           "0 9 * * 8": "weekday `8`", "0 9 31 2 *": "`0 9 31 2 *`"}  # fmt: skip


@pytest.mark.parametrize(("cron", "dates"), ACCEPTED.items())
def test_the_documented_extensions_fire_as_documented(cron: str, dates: list[str]) -> None:
    """Accepted, first fires on the dates the doc's table names (UTC)."""
    fires = Schedule.parse(cron, "UTC").next_fires(NEW_YEAR, len(dates))
    assert [f.local[:10] for f in fires] == dates
    named = "5#5" if cron.endswith("5#5") else cron
    assert f"`{named}`" in DOC.read_text()


@pytest.mark.parametrize(("cron", "named"), REFUSED.items())
def test_the_documented_refusals_are_refused(cron: str, named: str) -> None:
    """routine_schedule_invalid with details.path schedule.cron."""
    with pytest.raises(MaiaError) as refused:
        Schedule.parse(cron, "UTC")
    assert (refused.value.code, refused.value.details["path"]) == (
        "routine_schedule_invalid", "schedule.cron")  # fmt: skip
    assert named in DOC.read_text()
