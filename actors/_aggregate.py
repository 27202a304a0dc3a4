"""Write-ahead transitions: an aggregate's state changes in storage first, in memory second.

`Lifecycle` holds one aggregate's state and revision for its actor. `apply(event, ...)`
asks the transition table (refusals change nothing), then runs the concrete actor's
`persist(conn, change)` as ONE storage write: the state row, its event and its receipt
commit together or not at all. Only after the commit does memory move. A failed write
leaves memory as it was; a write whose outcome is unknown (it outlived its bound) leaves the
lifecycle `stale`: it refuses further transitions until the actor rehydrates from storage.

The storage actor is reached through the `Store` protocol (`storage.Storage` satisfies it),
so this module depends on no storage internals.
"""

from __future__ import annotations

import enum
import sqlite3
from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

import attrs
import trio

from maia.protocol import Clock, MaiaError

from ._table import Transition, TransitionTable

S = TypeVar("S", bound=enum.Enum)
E = TypeVar("E", bound=enum.Enum)
T = TypeVar("T")

DEFAULT_WRITE_BOUND_S = 60.0


class Store(Protocol):
    """What a lifecycle needs of the storage actor."""

    async def write(self, fn: Callable[[sqlite3.Connection], T]) -> T: ...


@attrs.frozen
class Change(Generic[S, E]):
    """One transition about to be written: what `persist` records."""

    aggregate_id: str
    transition: Transition[S, E]
    from_revision: int  # compare-and-set on this: a twin writer must fail, not overwrite
    to_revision: int
    caller: str
    now_ms: int  # wall time for the records people read
    payload: Any = None

    @property
    def state(self) -> S:
        return self.transition.state

    @property
    def target(self) -> S:
        return self.transition.target


Persist = Callable[[sqlite3.Connection, Change[Any, Any]], Any]


class Lifecycle(Generic[S, E]):
    """One aggregate's place in its lifecycle, moved only by committed transitions."""

    def __init__(
        self,
        table: TransitionTable[S, E],
        *,
        aggregate_id: str,
        state: S,
        revision: int,
        store: Store,
        persist: Persist,
        clock: Clock,
        write_bound_s: float = DEFAULT_WRITE_BOUND_S,
    ) -> None:
        if not isinstance(state, table.states):
            raise ValueError(f"{state!r} is not a {table.name} state")
        self.table = table
        self.aggregate_id = aggregate_id
        self._state = state
        self._revision = revision
        self._store = store
        self._persist = persist
        self._clock = clock
        self._write_bound_s = write_bound_s
        self._busy = False
        self._stale = False
        self.timeout_due_ms: int | None = None  # monotonic ms when `timeout_event` applies
        self.timeout_event: E | None = None

    @property
    def state(self) -> S:
        return self._state

    @property
    def revision(self) -> int:
        return self._revision

    @property
    def stale(self) -> bool:
        return self._stale

    async def apply(
        self,
        event: E,
        *,
        caller: str,
        context: Any = None,
        expected_revision: int | None = None,
        payload: Any = None,
    ) -> Any:
        """Apply `event`: check it, write it in one storage transaction, then move memory.

        Returns what `persist` returned. Raises the table's refusals (nothing written,
        nothing changed); whatever `persist` raised (its savepoint rolled back, memory
        unchanged); `unavailable` when the lifecycle is stale or the write outlived its
        bound (then it is stale: rehydrate). Not reentrant: one transition at a time.
        """
        if self._stale:
            raise MaiaError("unavailable", f"{self.table.name} {self.aggregate_id} must be "
                            "reloaded from storage", {"target": self.aggregate_id})  # fmt: skip
        if self._busy:
            raise RuntimeError("Lifecycle.apply is not reentrant: call it from the actor only")
        row = self.table.step(
            self._state, event, caller=caller, aggregate_id=self.aggregate_id, context=context,
            expected_revision=expected_revision, revision=self._revision,
        )  # fmt: skip
        change: Change[S, E] = Change(
            self.aggregate_id, row, self._revision, self._revision + 1, caller,
            self._clock.wall_ms(), payload,
        )  # fmt: skip
        persist = self._persist
        self._busy = True
        try:
            # Shielded: a cancelled caller must not leave us guessing whether it committed.
            with trio.CancelScope(shield=True) as scope:
                scope.deadline = trio.current_time() + self._write_bound_s
                result = await self._store.write(lambda conn: persist(conn, change))
            if scope.cancelled_caught:
                self._stale = True
                raise MaiaError("unavailable", f"the write for {self.aggregate_id} outlived "
                                "its bound", {"target": self.aggregate_id})  # fmt: skip
        finally:
            self._busy = False
        self._state = row.target  # committed: now memory may move
        self._revision += 1
        if row.timeout_ms is not None:
            self.timeout_due_ms = self._clock.monotonic_ms() + row.timeout_ms
            self.timeout_event = row.on_timeout
        else:
            self.timeout_due_ms = None
            self.timeout_event = None
        return result
