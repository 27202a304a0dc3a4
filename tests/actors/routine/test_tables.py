"""The routine and fire tables: every (state, event) pair answers a row or the table's typed
refusal, and docs/routines.md shows the tables as they are."""

from __future__ import annotations

from typing import Any

import pytest

from actors import TransitionTable
from actors.routine import FIRE_TABLE, ROUTINE_TABLE, ROUTINE_TABLES
from actors.routine._doc import DOC_PATH, splice
from actors.routine._table import CLIENT, SCHEDULER
from maia.core import MaiaError


@pytest.mark.parametrize("table", ROUTINE_TABLES, ids=lambda t: t.name)
def test_every_pair_answers_a_row_or_a_typed_refusal(table: TransitionTable[Any, Any]) -> None:
    """A pair with a row steps for its caller; a missing pair raises the table's code."""
    for state in table.states:
        for event in table.events:
            found = table.get(state, event)
            caller = next(iter(found.callers)) if found else CLIENT
            expected = None if found is None or not found.expects_revision else 1
            if found is None:
                with pytest.raises(MaiaError) as caught:
                    table.step(state, event, caller=caller, expected_revision=1, revision=1)
                assert caught.value.code == table.refusals.get(event, "invalid_state")
            else:
                row = table.step(state, event, caller=caller, expected_revision=expected,
                                 revision=1)  # fmt: skip
                assert row is found


def test_the_scheduler_and_clients_have_their_own_rows() -> None:
    """Only a client pauses, resumes, disables and runs; only the scheduler claims."""
    for row in ROUTINE_TABLE.rows:
        assert row.callers == ({SCHEDULER} if row.event.value == "routine.claim" else {CLIENT})
    assert all(r.callers == {SCHEDULER} for r in FIRE_TABLE.rows if r.event.value != "fire.run")


def test_docs_show_the_tables() -> None:
    """docs/routines.md equals what the tables render (python -m actors.routine._doc)."""
    text = DOC_PATH.read_text(encoding="utf-8")
    assert splice(text) == text
