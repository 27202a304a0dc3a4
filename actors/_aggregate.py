"""An aggregate actor from a kind's pure core: the runtime does the rest.

A kind that owns one row per actor (a routine, a webhook, a machine assignment) writes
  * its table (`TransitionTable`, with a `creation` row: creation is a transition),
  * its SQL (`Rows`: insert, compare-and-set update, event owner, event payload; and `load`),
  * its pure core: `decide(record, message, now_ms) -> Decision`, which names the table
    events to apply and the record's new fields, the client command it answers, the journal
    entries, the wake-ups to arm and the effects to start, and performs nothing,
and hands them to `AggregateKind`. `AggregateActor` then, for each message in a batch:
decides, commits the decision through the one write path (`_write`), adopts the rows as
written, starts the effects in its effect scope, and answers (a command's answer is its
`MutationResult`; otherwise `Decision.reply`). A refusal (`MaiaError`) answers that message
alone and changes nothing. A `Fired` state timer whose revision is not the record's is stale
and dropped before the core sees it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Generic, Protocol, TypeVar

import attrs

from maia.core import MaiaError

from ._actor import Envelope
from ._effects import EffectScope
from ._table import NODE, TransitionTable
from ._timers import Fired, Wake
from ._write import Change, Command, Entry, Rows, Write, WritePath

A = TypeVar("A")
M = TypeVar("M")
M_contra = TypeVar("M_contra", contravariant=True)


@attrs.frozen
class Effect:
    """A side effect started after the commit, in the actor's effect scope. What `run`
    returns, unless None, is told to the actor as its next message."""

    name: str
    run: Callable[[], Awaitable[Any]] = attrs.field(eq=False)


@attrs.frozen
class Decision(Generic[A]):
    """What the pure core decided for one message."""

    after: A | None = None  # the record's new fields (state and revision set by the table)
    events: tuple[Any, ...] = ()  # table events, applied in order
    caller: str = NODE
    expected_revision: int | None = None
    touch: bool = False  # a field change outside the lifecycle: bumps the revision
    payload: Mapping[str, Any] = attrs.field(factory=dict)
    command: Command | None = None
    result: Callable[[A], Any] | None = None  # the command's stored result, from the record
    journal: tuple[Entry, ...] = ()
    wakes: tuple[Wake, ...] = ()
    effects: tuple[Effect, ...] = ()
    reply: Any = None  # the answer when there is no command


class Core(Protocol[A, M_contra]):
    """A kind's pure core."""

    @property
    def table(self) -> TransitionTable[Any, Any]: ...

    @property
    def rows(self) -> Rows[A]: ...

    def decide(self, record: A | None, message: M_contra, now_ms: int) -> Decision[A]: ...


Load = Callable[[sqlite3.Connection, str], Any]


def is_stale(record: Any, message: object) -> bool:
    """A state timer armed at another revision of the record (or of another aggregate)."""
    if not isinstance(message, Fired) or message.subject_revision is None:
        return False
    return record is None or (message.subject_id, message.subject_revision) != (
        record.id, record.revision,
    )  # fmt: skip


class AggregateActor(Generic[A, M]):
    """One aggregate's actor: a `Behaviour` for `ActorRegistry`."""

    def __init__(self, core: Core[A, M], path: WritePath, record: A | None,
                 tell_self: Callable[[M], Awaitable[None]]) -> None:  # fmt: skip
        self.core = core
        self.path = path
        self.record = record
        self._tell_self = tell_self
        self._effects: EffectScope | None = None

    def attach(self, scope: EffectScope) -> None:
        self._effects = scope

    async def handle_batch(self, envelopes: list[Envelope[M]]) -> None:
        for envelope in envelopes:
            try:
                envelope.resolve(await self.handle(envelope.message))
            except MaiaError as refusal:
                envelope.refuse(refusal)

    async def handle(self, message: M) -> Any:
        """Decide, commit, adopt, start effects; the answer. Raises the core's refusals."""
        if is_stale(self.record, message):
            return None
        decision = self.core.decide(self.record, message, self.path.clock.wall_ms())
        changes: tuple[Change[Any], ...] = ()
        if decision.after is not None:
            changes = (Change(self.core.rows, self.core.table, self.record, decision.after,
                              decision.events, decision.caller, decision.expected_revision,
                              decision.touch, decision.payload),)  # fmt: skip
        result = decision.result
        write = Write(
            changes=changes, command=decision.command, journal=decision.journal,
            wakes=decision.wakes,
            result=(lambda _, records: result(records[0])) if result is not None else None,
        )  # fmt: skip
        if not (changes or decision.command or decision.journal or decision.wakes):
            self._start(decision)
            return decision.reply
        committed = await self.path.commit(write)
        if not committed.applied:
            return committed.mutation  # a replayed command: nothing moved, nothing to start
        if changes:
            self.record = committed.records[0]
        self._start(decision)
        return committed.mutation if decision.command is not None else decision.reply

    def _start(self, decision: Decision[A]) -> None:
        scope = self._effects
        if scope is None:
            return
        for effect in decision.effects:
            scope.start(effect.name, self._run_effect(effect))

    def _run_effect(self, effect: Effect) -> Callable[[], Awaitable[None]]:
        async def run() -> None:
            message = await effect.run()
            if message is not None:
                await self._tell_self(message)

        return run
