"""Transition tables as data (in the manner of h11's `_state.py`).

One table per lifecycle holds every transition of that lifecycle; a missing `(state, event)`
key *is* the refusal, so no if/elif chain elsewhere decides a transition. Each row carries
what the spec's "Lifecycle baseline" asks of a registry-owned transition: the callers allowed,
a guard (precondition), whether the caller must name the expected revision, the event type it
emits, whether it leaves a receipt, a timeout (and the event applied when it expires) and the
recovery path (the state the aggregate goes to when the Node restarts while it is there).

A table is checked when it is built, so a bad table fails at import, not in production:
  * every state, target, recovery state and event is a member of the table's enums;
  * no `(state, event)` pair appears twice;
  * no row leaves a terminal state, and every non-terminal state has a way out;
  * every state is reachable from the initial state;
  * a receipt explains an emitted event; a timeout names an event the target accepts;
  * a recovery state is reachable from the row's target;
  * the creation row (when the table has one: creation is a transition too) names a known
    event and lands in the initial state; `recover_with`, when given, has a row from every
    state with a recovery path, landing there.

Callers: `client` (an API request), `node` (the Node itself), `worker` (a worker frame).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Generic, TypeVar

import attrs

from maia.core import MaiaError

S = TypeVar("S", bound=enum.Enum)
E = TypeVar("E", bound=enum.Enum)

CLIENT = "client"
NODE = "node"
WORKER = "worker"


class TableError(ValueError):
    """A transition table that breaks a rule; `problems` lists every broken rule."""

    def __init__(self, name: str, problems: Sequence[str]) -> None:
        super().__init__(f"transition table {name}: " + "; ".join(problems))
        self.problems = tuple(problems)


@attrs.frozen
class Guard:
    """A named precondition over the context the actor passes to `step`."""

    name: str
    check: Callable[[Any], bool] = attrs.field(eq=False)


@attrs.frozen
class Transition(Generic[S, E]):
    """One row: `(state, event) -> target`, and what applying it entails."""

    state: S
    event: E
    target: S
    callers: frozenset[str]
    emits: str | None = None  # the event type appended to the journal
    receipt: bool = False  # a mutation a caller asked for: leaves a receipt
    guard: Guard | None = None
    expects_revision: bool = False
    timeout_ms: int | None = None
    on_timeout: E | None = None  # the event applied when `timeout_ms` passes in `target`
    recovery: S | None = None  # where a Node restart sends an aggregate left in `target`


def row(
    state: S,
    event: E,
    target: S,
    *callers: str,
    emits: str | None = None,
    receipt: bool = False,
    guard: Guard | None = None,
    expects_revision: bool = False,
    timeout_ms: int | None = None,
    on_timeout: E | None = None,
    recovery: S | None = None,
) -> Transition[S, E]:
    """A row, written compactly: `row(IDLE, STOP, STOPPED, "client", emits=..., ...)`."""
    return Transition(
        state, event, target, frozenset(callers), emits, receipt, guard,
        expects_revision, timeout_ms, on_timeout, recovery,
    )  # fmt: skip


def creation(
    event: E,
    target: S,
    *callers: str,
    emits: str | None = None,
    receipt: bool = False,
    timeout_ms: int | None = None,
    on_timeout: E | None = None,
    recovery: S | None = None,
) -> Transition[S, E]:
    """The row that creates an aggregate (from no state) in `target`, the initial state."""
    nothing: Any = None
    return Transition(nothing, event, target, frozenset(callers), emits, receipt, None,
                      False, timeout_ms, on_timeout, recovery)  # fmt: skip


class TransitionTable(Generic[S, E]):
    """A validated lifecycle: build it once at import; `step` answers or refuses.

    Raises `TableError` from the constructor when a rule is broken.
    """

    def __init__(
        self,
        name: str,
        *,
        states: type[S],
        events: type[E],
        initial: S,
        terminal: Iterable[S],
        rows: Sequence[Transition[S, E]],
        refusals: Mapping[E, str] | None = None,
        create: Transition[S, E] | None = None,
        recover_with: E | None = None,
    ) -> None:
        self.name = name
        self.creation = create
        self.recover_with = recover_with
        self.states = states
        self.events = events
        self.initial = initial
        self.terminal = frozenset(terminal)
        self.rows = tuple(rows)
        self.refusals = dict(refusals or {})
        self._index: dict[tuple[S, E], Transition[S, E]] = {}
        problems = self._check()
        if problems:
            raise TableError(name, problems)

    def _check(self) -> list[str]:
        problems: list[str] = []
        states, events = self.states, self.events
        if not isinstance(self.initial, states):
            problems.append(f"initial state {self.initial!r} is unknown")
        problems += [f"terminal state {s!r} is unknown" for s in self.terminal
                     if not isinstance(s, states)]  # fmt: skip
        problems += [f"refusal for unknown event {e!r}" for e in self.refusals
                     if not isinstance(e, events)]  # fmt: skip
        for r in self.rows:
            where = f"({_label(r.state)}, {_label(r.event)})"
            known = [("state", r.state, states), ("target", r.target, states),
                     ("event", r.event, events)]  # fmt: skip
            if r.recovery is not None:
                known.append(("recovery", r.recovery, states))
            if r.on_timeout is not None:
                known.append(("on_timeout", r.on_timeout, events))
            bad = [f"{what} {value!r} is unknown" for what, value, kind in known
                   if not isinstance(value, kind)]  # fmt: skip
            if bad:
                problems += [f"{where}: {b}" for b in bad]
                continue
            key = (r.state, r.event)
            if key in self._index:
                problems.append(f"{where}: duplicate pair")
                continue
            self._index[key] = r
            if r.state in self.terminal:
                problems.append(f"{where}: leaves terminal state {_label(r.state)}")
            if not r.callers:
                problems.append(f"{where}: no caller may apply it")
            if r.receipt and r.emits is None:
                problems.append(f"{where}: a receipt without an emitted event")
            if (r.timeout_ms is None) != (r.on_timeout is None):
                problems.append(f"{where}: timeout_ms and on_timeout go together")
            if r.timeout_ms is not None and r.timeout_ms <= 0:
                problems.append(f"{where}: timeout_ms must be positive")
        if problems:
            return problems
        for r in self.rows:
            where = f"({_label(r.state)}, {_label(r.event)})"
            if r.on_timeout is not None and (r.target, r.on_timeout) not in self._index:
                problems.append(f"{where}: on_timeout {_label(r.on_timeout)} has no row "
                                f"from {_label(r.target)}")  # fmt: skip
            if r.recovery is not None and r.recovery not in self.reachable_from(r.target):
                problems.append(f"{where}: recovery {_label(r.recovery)} is not reachable "
                                f"from {_label(r.target)}")  # fmt: skip
        problems += self._check_creation_and_recovery()
        reachable = self.reachable_from(self.initial)
        for s in states:
            if s not in reachable:
                problems.append(f"state {_label(s)} is unreachable from {_label(self.initial)}")
            elif s not in self.terminal and not any(r.state is s for r in self.rows):
                problems.append(f"state {_label(s)} is not terminal but has no way out")
        return problems

    def _check_creation_and_recovery(self) -> list[str]:
        problems: list[str] = []
        made = self.creation
        if made is not None:
            if not isinstance(made.event, self.events) or made.target is not self.initial:
                problems.append("creation must name a known event and land in the initial state")
            elif any(r.event is made.event for r in self.rows):
                problems.append(f"creation event {_label(made.event)} is also a row's event")
            if not made.callers:
                problems.append("no caller may create")
        seen: dict[S, S] = {}
        for r in self.rows:
            if r.recovery is not None and seen.setdefault(r.target, r.recovery) is not r.recovery:
                problems.append(f"rows into {_label(r.target)} disagree on its recovery")
        if self.recover_with is not None:
            for state, target in self.recovery_targets.items():
                found = self._index.get((state, self.recover_with))
                if found is None or found.target is not target:
                    problems.append(f"recover_with {_label(self.recover_with)} has no row from "
                                    f"{_label(state)} to {_label(target)}")  # fmt: skip
        return problems

    @property
    def recovery_targets(self) -> dict[S, S]:
        """Where a Node start sends an aggregate left in each state (the recovery column)."""
        found: dict[S, S] = {}
        made = [self.creation] if self.creation is not None else []
        for r in (*made, *self.rows):
            if r.recovery is not None:
                found.setdefault(r.target, r.recovery)
        return found

    @property
    def recovery_states(self) -> frozenset[S]:
        return frozenset(self.recovery_targets)

    def check_caller(self, found: Transition[S, E], caller: str, aggregate_id: str) -> None:
        """Raises `role_denied` unless `caller` may apply `found`."""
        if caller not in found.callers:
            raise MaiaError(
                "role_denied",
                f"{caller} may not apply {found.event.value} to {self.name} {aggregate_id}",
                {"resource": self.name, "id": aggregate_id, "role": caller,
                 "method": found.event.value},
            )  # fmt: skip

    def reachable_from(self, start: S) -> frozenset[S]:
        """Every state reachable from `start` (itself included) through rows."""
        seen = {start}
        frontier = [start]
        while frontier:
            here = frontier.pop()
            for r in self.rows:
                if r.state is here and r.target not in seen:
                    seen.add(r.target)
                    frontier.append(r.target)
        return frozenset(seen)

    def get(self, state: S, event: E) -> Transition[S, E] | None:
        """The row for `(state, event)`, or None: no row means the event is refused there."""
        return self._index.get((state, event))

    def events_from(self, state: S) -> tuple[E, ...]:
        """The events `state` accepts, in table order."""
        return tuple(r.event for r in self.rows if r.state is state)

    def step(
        self,
        state: S,
        event: E,
        *,
        caller: str,
        aggregate_id: str = "",
        context: Any = None,
        expected_revision: int | None = None,
        revision: int | None = None,
    ) -> Transition[S, E]:
        """The row that applies, after checking caller, revision and guard. Pure.

        Raises `MaiaError`: the table's refusal code for `event` (default `invalid_state`)
        when `(state, event)` has no row, naming both; `role_denied` for a caller the row does
        not allow; `validation_failed`/`revision_conflict` when the row expects a revision
        and it is missing or stale; `invalid_state` when the guard refuses.
        """
        found = self._index.get((state, event))
        # The common case first: a row the caller may apply with nothing more to check (the
        # refusals' details are built only when refusing: this runs for every transition).
        if (found is not None and caller in found.callers and not found.expects_revision
                and found.guard is None):  # fmt: skip
            return found
        resource = self.name
        details: dict[str, Any] = {"resource": resource, "id": aggregate_id,
                                   "state": state.value, "event": event.value}  # fmt: skip
        if found is None:
            code = self.refusals.get(event, "invalid_state")
            details[f"{resource}Id"] = aggregate_id
            raise MaiaError(
                code,
                f"{resource} {aggregate_id} is {state.value}: {event.value} does not apply",
                details,
            )
        if caller not in found.callers:
            raise MaiaError(
                "role_denied",
                f"{caller} may not apply {event.value} to {resource} {aggregate_id}",
                {**details, "role": caller, "method": event.value},
            )
        if found.expects_revision:
            if expected_revision is None:
                raise MaiaError(
                    "validation_failed",
                    f"expectedRevision: {event.value} needs the {resource}'s revision",
                    {"path": "expectedRevision", "detail": "required"},
                )
            if revision is not None and expected_revision != revision:
                raise MaiaError(
                    "revision_conflict",
                    f"{resource} {aggregate_id} is at revision {revision}",
                    {**details, "actual": revision, "expected": expected_revision},
                )
        if found.guard is not None and not found.guard.check(context):
            raise MaiaError(
                "invalid_state",
                f"{resource} {aggregate_id} is {state.value}: {found.guard.name} does not hold "
                f"for {event.value}",
                {**details, "guard": found.guard.name},
            )
        return found


def _label(member: enum.Enum | Any) -> str:
    return str(member.value) if isinstance(member, enum.Enum) else repr(member)
