"""`actors._moved.moved`: the write path's row move is attrs.evolve, generated per class."""

from __future__ import annotations

import attrs
import pytest

from actors._moved import moved
from actors.session._lifecycles import TurnState
from actors.session._sql_turns import TurnRecord


@attrs.frozen
class _Checked:
    id: str
    state: str = attrs.field(validator=attrs.validators.in_(("a", "b")))
    revision: int = 1
    _note: str = "private"  # init alias "note"
    derived: int = attrs.field(init=False, default=7)


def test_moved_equals_attrs_evolve_on_a_turn_row() -> None:
    """A turn row moved keeps every other field, exactly as attrs.evolve does."""
    row = TurnRecord("trn_1", "ses_1", "prj_1", TurnState.QUEUED, 1, text="hi", seq=3)
    assert moved(row, TurnState.RUNNING, 2) == attrs.evolve(
        row, state=TurnState.RUNNING, revision=2
    )
    assert moved(row, TurnState.RUNNING, 2) is not row


def test_moved_runs_the_class_validators_and_keeps_private_and_derived_fields() -> None:
    """Validators still run (a bad state is refused), private fields keep their value."""
    row = _Checked("x", "a", note="kept")
    after = moved(row, "b", 5)
    assert (after.state, after.revision, after._note, after.derived) == ("b", 5, "kept", 7)
    with pytest.raises(ValueError, match="'state' must be in"):
        moved(row, "c", 6)


def test_moved_refuses_a_class_without_state_and_revision() -> None:
    """A class with no state/revision to move is a TypeError naming it."""

    @attrs.frozen
    class _NoState:
        id: str

    with pytest.raises(TypeError, match="_NoState"):
        moved(_NoState("x"), "a", 1)
