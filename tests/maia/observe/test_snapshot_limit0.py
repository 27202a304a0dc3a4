"""`observe.events` with `limit: 0` answers `truncated` (whether any match exists) with one
bounded SQL statement, not the snapshot's Python scan: it decoded up to 20,000 rows (the
domain filter ran in Python) to say one boolean. The domain filter now runs in SQL
(`domain_of` as a prefix test), the statement stops at the first match, and the answer is
the one the scan gives: checked against `Matcher` over every event of a fixed journal, for
derandomized queries."""

from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import maia.observe._journal as journal
from maia.core import SystemClock
from maia.observe._journal import SNAPSHOT_SCAN_MAX, tail_snapshot
from maia.observe._query import Matcher, ObservationQuery
from storage import EVENT_COLUMNS, EventRecord, append_event, open_storage

TYPES = ["turn.completed", "session.created", "routine.fired", "storage.pruned",
         "machine.enrolled", "project.added", "x.tick", "nodot", "lease.granted"]  # fmt: skip
DOMAINS = ["agent", "swarm", "node", "provider", "voice", "a2a", "security", "storage",
           "scheduler"]  # fmt: skip
SESSIONS = ["session_a", "session_b", None]
CLASSES = ["public", "operator", "project", "sensitive"]


def _journal(path: Path, rows: list[tuple[str, str | None, str]]) -> None:
    """A real journal (storage's own schema) holding `rows` (type, Session, class)."""

    async def build() -> None:
        async with open_storage(path, clock=SystemClock(), synchronous="OFF") as store:

            def write(conn: sqlite3.Connection) -> None:
                for n, (event_type, session_id, classification) in enumerate(rows):
                    append_event(conn, owner_id="owner_x", event_type=event_type,
                                 payload={"n": n}, now_ms=1, session_id=session_id,
                                 classification=classification)  # type: ignore[arg-type]  # fmt: skip

            await store.write(write)

    trio.run(build)


class _Counting(EventRecord):
    decoded = 0

    @classmethod
    def from_row(cls, row: Any) -> EventRecord:
        _Counting.decoded += 1
        return EventRecord.from_row(row)


@pytest.fixture
def counting(monkeypatch: pytest.MonkeyPatch) -> type[_Counting]:
    _Counting.decoded = 0
    monkeypatch.setattr(journal, "EventRecord", _Counting)
    return _Counting


def test_limit_zero_decodes_no_row(tmp_path: Path, counting: type[_Counting]) -> None:
    """One agent event under 3,000 node events: `truncated` true for agent, false for
    storage, true beyond the scan bound; no row decoded for any."""
    path = tmp_path / "db.sqlite"
    _journal(path, [("turn.completed", "session_a", "operator")]
             + [("x.tick", None, "operator")] * 3_000)  # fmt: skip
    with sqlite3.connect(path) as conn:
        agent = tail_snapshot(conn, ObservationQuery(domains=("agent",), limit=0))
        assert (agent.events, agent.truncated, agent.head) == ((), True, 3_001)
        storage = tail_snapshot(conn, ObservationQuery(domains=("storage",), limit=0))
        assert (storage.events, storage.truncated) == ((), False)
        none = tail_snapshot(conn, ObservationQuery(session_ids=("session_b",), limit=0))
        assert none.truncated is False
        node = tail_snapshot(conn, ObservationQuery(domains=("node",), limit=0))
        assert node.truncated is True
    assert counting.decoded == 0
    with sqlite3.connect(path) as conn:  # the general path still decodes what it returns
        one = tail_snapshot(conn, ObservationQuery(domains=("agent",), limit=1))
        assert [e.event_type for e in one.events] == ["turn.completed"]
        assert one.truncated is False


def test_past_the_scan_bound_the_answer_is_the_scans(tmp_path: Path) -> None:
    """More non-matching rows than the scan looks at: truncated (the scan stopped before
    the start), as the snapshot of limit 1 says; exactly the bound: not truncated."""
    path = tmp_path / "db.sqlite"
    _journal(path, [("x.tick", None, "operator")] * (SNAPSHOT_SCAN_MAX + 1))
    with sqlite3.connect(path) as conn:
        for limit in (0, 1):
            snap = tail_snapshot(conn, ObservationQuery(domains=("agent",), limit=limit))
            assert (snap.events, snap.truncated) == ((), True)
        conn.execute("DELETE FROM events WHERE position = 1")  # exactly the bound left
        for limit in (0, 1):
            snap = tail_snapshot(conn, ObservationQuery(domains=("agent",), limit=limit))
            assert (snap.events, snap.truncated) == ((), False)


@pytest.fixture(scope="module")
def fixed_journal(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sqlite3.Connection]:
    """Every (type, Session, class) combination once, in a fixed shuffled order."""
    combos = list(itertools.product(TYPES, SESSIONS, CLASSES))
    rows = [combos[(i * 37) % len(combos)] for i in range(len(combos))]
    path = tmp_path_factory.mktemp("journal") / "db.sqlite"
    _journal(path, rows)
    with sqlite3.connect(path) as conn:
        yield conn


def _subset(items: list[Any]) -> st.SearchStrategy[tuple[Any, ...]]:
    return st.lists(st.sampled_from(items), max_size=3, unique=True).map(tuple)


@settings(derandomize=True, max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(
    domains=_subset(DOMAINS),
    types=_subset([*TYPES, "turn.failed"]),
    sessions=_subset(["session_a", "session_b", "session_c"]),
    classes=_subset(CLASSES),
)
def test_limit_zero_says_whether_any_event_matches(
    fixed_journal: sqlite3.Connection,
    domains: tuple[Any, ...],
    types: tuple[str, ...],
    sessions: tuple[str, ...],
    classes: tuple[Any, ...],
) -> None:
    query = ObservationQuery(domains=domains, event_types=types, session_ids=sessions,
                             classifications=classes, limit=0)  # fmt: skip
    rows = fixed_journal.execute(f"SELECT {EVENT_COLUMNS} FROM events").fetchall()
    matcher = Matcher(query)
    expected = any(
        matcher.matches(
            event_type=e.event_type,
            importance="authoritative",
            project_id=e.project_id,
            session_id=e.session_id,
            classification=e.classification,
        )
        for e in map(EventRecord.from_row, rows)
    )
    assert tail_snapshot(fixed_journal, query).truncated is expected
    one = tail_snapshot(fixed_journal, attrs.evolve(query, limit=1))  # the scan's answer
    assert bool(one.events) is expected
