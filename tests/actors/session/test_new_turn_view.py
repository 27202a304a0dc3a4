"""A send's turn view built from its own write (`new_turn_view`) is the one `turn_view` reads
back from the real row, queued and dispatching."""

from __future__ import annotations

import functools
import sqlite3
from pathlib import Path

import pytest

from actors.session import new_turn_view, turn_view
from actors.session._lifecycles import TurnState
from actors.session._sql_turns import TURN_ROWS, TurnRecord
from maia.protocol import SystemClock
from storage import open_storage

# 160-byte preview edge: the text is cut by the same rule on both sides
TEXTS = ("hi", "é" * 100, "x" * 500)


def _seed(conn: sqlite3.Connection) -> None:
    conn.execute(
        "INSERT INTO projects (project_id, project_key, root, revision, created_ms, updated_ms)"
        " VALUES ('project_t', 'tests', '/tmp', 1, 0, 0)"
    )
    conn.execute(
        "INSERT INTO sessions (session_id, project_id, executor, cwd, state, created_ms,"
        " updated_ms) VALUES ('session_t', 'project_t', 'builtin:echo', '/tmp', 'idle', 0, 0)"
    )


def _insert_and_move(conn: sqlite3.Connection, turn_id: str, text: str, now: int) -> list[bool]:
    queued = TurnRecord(turn_id, "session_t", "project_t", TurnState.QUEUED, 1, text, 1)
    TURN_ROWS.insert(conn, queued, now)
    same = [turn_view(conn, turn_id) == new_turn_view(turn_id, "session_t", "queued", 1, now, text)]
    dispatching = TurnRecord(turn_id, "session_t", "project_t", TurnState.DISPATCHING, 2, text, 1)
    assert TURN_ROWS.update(conn, queued, dispatching, now + 5)
    built = new_turn_view(turn_id, "session_t", "dispatching", 2, now, text)
    same.append(turn_view(conn, turn_id) == built)
    conn.execute("DELETE FROM turns WHERE turn_id = ?", (turn_id,))
    return same


async def test_new_turn_view_equals_the_row_read_back(tmp_path: Path) -> None:
    """Queued and dispatching, short, non-ASCII and over-long prompts: equal to the read."""
    async with open_storage(tmp_path / "maia.db", clock=SystemClock()) as store:
        await store.write(_seed)
        for n, text in enumerate(TEXTS):
            same = await store.write(functools.partial(_insert_and_move, turn_id=f"turn_{n}",
                                                       text=text, now=1_234))  # fmt: skip
            assert same == [True, True], text[:10]


def test_new_turn_view_refuses_a_state_a_new_turn_cannot_be_in() -> None:
    """A running or ended turn has columns only storage knows: refused, not guessed."""
    with pytest.raises(ValueError, match="not running"):
        new_turn_view("turn_1", "session_t", "running", 3, 0, "hi")
