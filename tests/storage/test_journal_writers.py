"""Only `append_event` and the prune write the journal's tables: the writer's cached heads
(storage/_heads.py) are exact on that rule, so a write fn's own SQL that inserted an event
after rolling back its own savepoint could hide the rollback from the rowid check (found by
session 8's review of the heads). This test holds the product to the rule."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("storage", "actors", "maia", "supervision", "worker_bridge")
# The journal's own module; the schema's migrations run before any writer keeps heads.
ALLOWED = {"storage/_events.py", "storage/_schema.py"}
WRITES = re.compile(
    r"\b(?:insert|replace)\b[\w\s]*?\binto\s+[\"`\[]?(?:events|event_owners)\b"
    r"|\bupdate\s+(?:or\s+\w+\s+)?[\"`\[]?(?:events|event_owners)\b"
    r"|\bdelete\s+from\s+[\"`\[]?(?:events|event_owners)\b"
    r"|\btrigger\b[^;]*?\bon\s+[\"`\[]?(?:events|event_owners)\b",  # a trigger on them
    re.IGNORECASE,
)


def _writers() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            name = path.relative_to(ROOT).as_posix()
            hits = [m.group(0) for m in WRITES.finditer(path.read_text(encoding="utf-8"))]
            if hits and name not in ALLOWED:
                found[name] = hits
    return found


def test_no_product_sql_but_the_journals_own_writes_events_or_their_owners() -> None:
    """No product module outside storage/_events.py (and the migrations) inserts, updates or
    deletes `events` / `event_owners` rows, or puts a trigger on them."""
    assert _writers() == {}


def test_the_rule_sees_a_write_when_there_is_one() -> None:
    """The pattern finds the journal's own statements (so an empty answer above means none)."""
    text = (ROOT / "storage/_events.py").read_text(encoding="utf-8")
    kinds = {m.group(0).split()[0].lower() for m in WRITES.finditer(text)}
    assert {"insert", "delete"} <= kinds
