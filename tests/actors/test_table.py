"""The transition-table validator and `step`: rules checked at build, typed refusals."""

from __future__ import annotations

import enum

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from actors import Guard, TableError, Transition, TransitionTable, row
from maia.protocol import MaiaError


class S(enum.Enum):
    A = "a"
    B = "b"
    C = "c"
    D = "d"


class E(enum.Enum):
    GO = "go"
    BACK = "back"
    END = "end"


class Other(enum.Enum):
    X = "x"


def build(rows: list[Transition[S, E]], terminal: tuple[S, ...] = (S.D,)) -> TransitionTable[S, E]:
    return TransitionTable("thing", states=S, events=E, initial=S.A, terminal=terminal, rows=rows)


GOOD = [
    row(S.A, E.GO, S.B, "client", emits="thing.b", receipt=True),
    row(S.B, E.GO, S.C, "node", timeout_ms=5, on_timeout=E.END, recovery=S.D),
    row(S.B, E.BACK, S.A, "node"),
    row(S.C, E.END, S.D, "node", "worker"),
]


def test_good_table_builds_and_steps() -> None:
    """A table obeying every rule builds, and `step` returns the row for an allowed caller."""
    table = build(GOOD)
    assert table.step(S.A, E.GO, caller="client").target is S.B
    assert table.events_from(S.B) == (E.GO, E.BACK)
    assert table.reachable_from(S.B) == frozenset(S)


@pytest.mark.parametrize(
    ("rows", "terminal", "fragment"),
    [
        ([*GOOD, row(S.A, E.GO, S.C, "client")], (S.D,), "duplicate pair"),
        ([*GOOD, row(S.D, E.BACK, S.A, "node")], (S.D,), "leaves terminal state d"),
        (GOOD[:1] + GOOD[2:], (S.D,), "state c is unreachable"),
        ([*GOOD[:3], row(S.C, E.END, S.C, "node")], (S.D,), "state d is unreachable"),
        (GOOD, (), "state d is not terminal but has no way out"),
        ([*GOOD, row(S.C, E.BACK, Other.X, "node")], (S.D,), "target <Other.X"),
        ([*GOOD, row(S.C, E.GO, S.D)], (S.D,), "no caller may apply it"),
        ([*GOOD, row(S.C, E.GO, S.D, "node", receipt=True)], (S.D,), "a receipt without"),
        ([*GOOD, row(S.C, E.GO, S.D, "node", timeout_ms=3)], (S.D,), "go together"),
        (
            [*GOOD, row(S.C, E.GO, S.D, "node", timeout_ms=3, on_timeout=E.BACK)],
            (S.D,),
            "on_timeout back has no row from d",
        ),
        ([*GOOD, row(S.C, E.GO, S.D, "node", recovery=S.A)], (S.D,), "recovery a is not reachable"),
    ],
)
def test_broken_tables_refused(
    rows: list[Transition[S, E]], terminal: tuple[S, ...], fragment: str
) -> None:
    """Each broken rule is refused at build with a message naming it."""
    with pytest.raises(TableError) as info:
        build(rows, terminal)
    assert any(fragment in problem for problem in info.value.problems), info.value.problems


def test_missing_pair_is_typed_refusal() -> None:
    """An event with no row raises `invalid_state` naming the state and the event."""
    table = build(GOOD)
    with pytest.raises(MaiaError) as info:
        table.step(S.A, E.END, caller="node", aggregate_id="th_1")
    assert info.value.code == "invalid_state"
    assert info.value.details["state"] == "a"
    assert info.value.details["event"] == "end"
    assert "is a: end does not apply" in info.value.message


def test_caller_revision_and_guard_checked() -> None:
    """A wrong caller, a missing or stale revision and a failing guard are each refused."""
    rows = [
        row(S.A, E.GO, S.B, "client", emits="x", receipt=True, expects_revision=True,
            guard=Guard("has_room", lambda ctx: bool(ctx))),
        *GOOD[1:],
    ]  # fmt: skip
    table = build(rows)
    codes = []
    attempts: list[dict[str, object]] = [
        {"caller": "worker", "expected_revision": 1, "revision": 1, "context": True},
        {"caller": "client", "expected_revision": None, "revision": 1, "context": True},
        {"caller": "client", "expected_revision": 1, "revision": 2, "context": True},
        {"caller": "client", "expected_revision": 2, "revision": 2, "context": False},
    ]
    for kwargs in attempts:
        with pytest.raises(MaiaError) as info:
            table.step(S.A, E.GO, **kwargs)  # type: ignore[arg-type]
        codes.append(info.value.code)
    assert codes == ["role_denied", "validation_failed", "revision_conflict", "invalid_state"]
    assert table.step(S.A, E.GO, caller="client", expected_revision=3, revision=3, context=1)


def test_refusal_code_per_event() -> None:
    """A table may name the refusal code for an event (turn.cancel -> turn_not_queued)."""
    table = TransitionTable(
        "thing", states=S, events=E, initial=S.A, terminal=(S.D,), rows=GOOD,
        refusals={E.END: "turn_not_queued"},
    )  # fmt: skip
    with pytest.raises(MaiaError) as info:
        table.step(S.A, E.END, caller="node")
    assert info.value.code == "turn_not_queued"


def _oracle(rows: dict[tuple[S, E], S], terminal: frozenset[S]) -> bool:
    """An independent statement of the rules for rows with no timeouts or recovery."""
    if any(state in terminal for state, _ in rows):
        return False
    seen, frontier = {S.A}, [S.A]
    while frontier:
        here = frontier.pop()
        for (state, _), target in rows.items():
            if state is here and target not in seen:
                seen.add(target)
                frontier.append(target)
    if seen != set(S):
        return False
    return all(s in terminal or any(st_ is s for st_, _ in rows) for s in S)


class TableMachine(RuleBasedStateMachine):
    """Random edits to a table: the validator agrees with an oracle; `step` matches rows."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[tuple[S, E], S] = {}
        self.duplicate = False
        self.terminal: frozenset[S] = frozenset({S.D})

    @rule(state=st.sampled_from(S), event=st.sampled_from(E), to=st.sampled_from(S))
    def add(self, state: S, event: E, to: S) -> None:
        if (state, event) in self.rows:
            self.duplicate = True
        self.rows[(state, event)] = to

    @precondition(lambda self: bool(self.rows))
    @rule(data=st.data())
    def remove(self, data: st.DataObject) -> None:
        key = data.draw(st.sampled_from(sorted(self.rows, key=str)))
        del self.rows[key]
        self.duplicate = False

    @rule(terminal=st.frozensets(st.sampled_from(S), max_size=2))
    def set_terminal(self, terminal: frozenset[S]) -> None:
        self.terminal = terminal

    @invariant()
    def validator_agrees(self) -> None:
        listed = [row(s, e, t, "node") for (s, e), t in self.rows.items()]
        if self.duplicate:
            listed.append(listed[-1])
        try:
            table = build(listed, tuple(self.terminal))
        except TableError:
            assert self.duplicate or not _oracle(self.rows, self.terminal)
            return
        assert not self.duplicate
        assert _oracle(self.rows, self.terminal)
        for s in S:
            for e in E:
                if (s, e) in self.rows:
                    assert table.step(s, e, caller="node").target is self.rows[(s, e)]
                else:
                    with pytest.raises(MaiaError):
                        table.step(s, e, caller="node")


TableMachine.TestCase.settings = settings(max_examples=150, stateful_step_count=20)
test_table_machine = TableMachine.TestCase


class F(enum.Enum):
    MAKE = "make"
    GO = "go"
    LOST = "lost"


def test_creation_row_and_recover_with_are_checked() -> None:
    """Creation must land in the initial state; `recover_with` must have a row from every
    state with a recovery path to that path; the recovery column is readable."""
    from actors import creation

    rows = [row(S.A, F.GO, S.B, "node", recovery=S.D), row(S.B, F.LOST, S.D, "node")]

    def build2(**extra: object) -> TransitionTable[S, F]:
        return TransitionTable("t", states=S, events=F, initial=S.A, terminal=(S.D,),
                               rows=rows, **extra)  # type: ignore[arg-type]  # fmt: skip

    with pytest.raises(TableError):  # c is unreachable: keep the table small, then fix it
        build2()
    rows.append(row(S.B, F.GO, S.C, "node", recovery=S.D))
    rows.append(row(S.C, F.LOST, S.D, "node"))
    table = build2(create=creation(F.MAKE, S.A, "client", emits="made"), recover_with=F.LOST)
    assert table.creation is not None
    assert table.creation.target is S.A
    assert table.recovery_targets == {S.B: S.D, S.C: S.D}
    with pytest.raises(TableError, match="initial state"):
        build2(create=creation(F.MAKE, S.B, "client"))
    with pytest.raises(TableError, match="also a row's event"):
        build2(create=creation(F.GO, S.A, "client"))
    with pytest.raises(TableError, match="recover_with go has no row from b to d"):
        build2(recover_with=F.GO)
