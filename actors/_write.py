"""The one write path: how every kind's actor applies a transition.

A `Write` is what one message changes: one `Change` per aggregate row it moves (its table
events, applied in order, each checked by the table), the idempotency key and result of the
client command it answers (`command`: a receipt and a stored result), events outside the
lifecycle (`journal`), the kind's own extra statements (`sql`) and durable wake-ups
(`wakes`). `WritePath.commit(write)`:

  1. plans it in the actor's task, purely: walks each change's events through its table
     (caller, expected revision, guard) and computes the rows as they will be. A refusal is
     raised here, unless the write carries a command: then it is raised *inside* the
     mutation, so a retried command that already ran gets its stored result instead;
  2. runs it as ONE storage write: compare-and-set on each row's revision (`Rows.update`),
     or the insert of a created row (creation is a transition too: the table's `creation`
     row), the events each table row emits, the receipt, the timer rows, the extra SQL;
  3. only after the commit returns the rows as written (`Committed.records`), for the actor
     to adopt. A failed or refused write changes no memory and no row.

Revisions: each applied table row bumps the row's revision by one (its event carries that
revision); `touch=True` bumps it once more for a change outside the lifecycle (a rename).

Envelope: a write that answers a command gets the command's correlation (its commandId, or
`Write.correlation_id`) and cause on every event and its receipt, through `run_mutation`; a
write without one may name `correlation_id` / `causation_id` (what made the actor write:
a timer, another aggregate's event), else its events are roots (their own IDs).

Timers: a row with a `timeout_ms` arms the aggregate's state timer (its `on_timeout` event,
guarded by the revision it was armed at); any later transition of that aggregate replaces or
removes it, in the same transaction. See `_timers`.
"""

from __future__ import annotations

import contextlib
import enum
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, Protocol, TypeVar

import attrs

from maia.core import Clock, MaiaError
from storage import (
    Applied,
    Envelope,
    MutationKey,
    MutationResult,
    ReceiptTarget,
    append_event,
    event_context,
    run_mutation,
)

from ._moved import moved
from ._table import NODE, Transition, TransitionTable
from ._timers import DurableTimers, TimerRow, Wake, arm_timer, disarm_timer, state_timer_name

A = TypeVar("A")
T = TypeVar("T")
A_contra = TypeVar("A_contra", contravariant=True)


class Record(Protocol):
    """What the runtime reads of an aggregate's memory (an `attrs.frozen` class)."""

    @property
    def id(self) -> str: ...

    @property
    def state(self) -> Any: ...

    @property
    def revision(self) -> int: ...


R = TypeVar("R", bound=Record)


@attrs.frozen
class EventOwner:
    """Whose journal an event goes to."""

    owner_id: str
    owner_type: str
    project_id: str | None = None
    session_id: str | None = None


class Rows(Protocol[A_contra]):
    """The SQL of one aggregate table: the kind's `_sql` module implements it."""

    resource: str  # the name in errors and receipts: "session", "routine"

    def insert(self, conn: sqlite3.Connection, record: A_contra, now_ms: int) -> None: ...

    def update(
        self, conn: sqlite3.Connection, before: A_contra, after: A_contra, now_ms: int
    ) -> bool:
        """Write `after` only if the row is still at `before.revision`; False if not."""
        ...

    def owner(self, record: A_contra) -> EventOwner: ...

    def payload(self, row: Transition[Any, Any], after: A_contra) -> dict[str, Any]:
        """The body of the event `row` emits (before the change's own `payload`)."""
        ...


@attrs.frozen
class Command:
    """The idempotency key and input digest of a client mutation."""

    command_id: str
    actor_id: str
    digest: str
    operation: str


@attrs.frozen
class Entry:
    """A journal event outside the lifecycle (`turn.queued`, `session.renamed`)."""

    owner: EventOwner
    event_type: str
    payload: Mapping[str, Any]
    revision: int | None = None
    actor_id: str | None = None


@attrs.frozen
class Change(Generic[A]):
    """One aggregate row moved by a write. `after` carries the fields the kind changed; the
    runtime sets its `state` and `revision` from the table walk."""

    rows: Rows[A]
    table: TransitionTable[Any, Any]
    before: A | None  # None: the row is created (the first event is the table's creation)
    after: A
    events: tuple[enum.Enum, ...] = ()
    caller: str = NODE
    expected_revision: int | None = None
    touch: bool = False
    payload: Mapping[str, Any] = attrs.field(factory=dict)
    receipt: bool | None = None  # a receipt target: None = as the table rows say
    actor_id: str | None = None  # whose timers it arms, when not the write path's actor
    event_actor: str | None = None  # the `actorId` its lifecycle events record (a client)
    # False: the kind bounds this aggregate's states another way, so the rows' timeouts arm
    # no state timer (the Session: its worker supervisor bounds a start, its handle a stop).
    timer: bool = True
    # The events' aggregateRevision when they go to another aggregate's journal (a turn's
    # to its Session's: the Session's revision); None: the row's own revision.
    owner_revision: int | None = None


@attrs.frozen
class Write:
    changes: tuple[Change[Any], ...] = ()
    command: Command | None = None
    # The mutation's stored result (JSON), from the connection and the rows as written.
    result: Callable[[sqlite3.Connection, tuple[Any, ...]], Any] | None = None
    journal: tuple[Entry, ...] = ()
    sql: Callable[[sqlite3.Connection, tuple[Any, ...]], None] | None = None
    wakes: tuple[Wake, ...] = ()
    extra_targets: tuple[ReceiptTarget, ...] = ()
    # The envelope of its events (see the module): a command's correlation by default.
    correlation_id: str | None = None
    causation_id: str | None = None


@attrs.frozen
class Committed:
    """A write as it committed: the rows as written (the actor adopts them), the stored
    mutation result (`duplicate`: replayed, nothing changed), the events appended."""

    records: tuple[Any, ...]
    mutation: MutationResult | None
    event_ids: tuple[str, ...]
    value: Any = None  # what `result` returned

    @property
    def applied(self) -> bool:
        return self.mutation is None or self.mutation.delivery == "new"


@attrs.frozen
class _Step:
    change: Change[Any]
    after: Any
    rows: tuple[tuple[Transition[Any, Any], int], ...]  # each applied row, its revision
    timer: tuple[enum.Enum, int] | None  # (on_timeout event, ms) armed by the last row
    moved: bool


def plan_change(change: Change[Any]) -> _Step:
    """Walk `change.events` through its table. Pure; raises the table's refusals."""
    table = change.table
    before = change.before
    applied: list[tuple[Transition[Any, Any], int]] = []
    events = change.events
    if before is None:
        creation = table.creation
        if creation is None or not events or events[0] is not creation.event:
            raise ValueError(f"creating a {table.name} needs its creation event first")
        table.check_caller(creation, change.caller, change.after.id)
        state, revision = creation.target, 1
        applied.append((creation, 1))
        events = events[1:]
    else:
        state, revision = before.state, before.revision
    expected = change.expected_revision
    for event in events:
        row = table.step(state, event, caller=change.caller, aggregate_id=change.after.id,
                         expected_revision=expected, revision=revision)  # fmt: skip
        expected = None  # the caller's expectation is about where it started
        revision += 1
        state = row.target
        applied.append((row, revision))
    if change.touch:
        if before is not None and expected is not None and expected != before.revision:
            raise MaiaError(
                "revision_conflict",
                f"{table.name} {before.id} is at revision {before.revision}",
                {"resource": table.name, "id": before.id, "actual": before.revision,
                 "expected": expected},
            )  # fmt: skip
        revision += 1
    after = moved(change.after, state, revision)
    last = applied[-1][0] if applied else None
    timer = None
    if last is not None and last.timeout_ms is not None and last.on_timeout is not None:
        timer = (last.on_timeout, last.timeout_ms)
    return _Step(change, after, tuple(applied), timer, bool(applied))


class Tx:
    """One storage transaction of the write path, in the writer thread. `WritePath.commit`
    runs on it, and so does a kind whose transitions are decided as they are written
    (`WritePath.transact`: the Session, whose batch of sends or a turn's end with the next
    turn's dispatch is one transaction): each `apply` walks a change through its table and
    writes it (compare-and-set, its events, its receipt target, its state timer); `entry`
    appends a journal event outside the lifecycle; `wake` arms or disarms a wake-up. The
    timer rows are written once, at the end of the transaction (the last word on a name
    wins), and mirrored in memory only after the commit.
    """

    def __init__(self, conn: sqlite3.Connection, kind: str, actor_id: str, now_ms: int,
                 mono_ms: int, epoch: int) -> None:  # fmt: skip
        self.conn = conn
        self.now = now_ms
        self._mono = mono_ms
        self._epoch = epoch
        self._kind = kind
        self._actor = actor_id
        self.event_ids: list[str] = []
        self.targets: list[ReceiptTarget] = []
        self._timers: dict[tuple[str, str], TimerRow | None] = {}  # None: disarmed

    def apply(self, change: Change[A]) -> A:
        """Plan `change` (raises the table's refusals, nothing written) and write it; the
        row as written."""
        step = plan_change(change)
        self.execute(step)
        return step.after  # type: ignore[no-any-return]

    def execute(self, step: _Step) -> None:
        _execute(self.conn, step, self.now, self.event_ids, self.targets)
        if not step.moved or not step.change.timer:
            return
        actor = step.change.actor_id or self._actor
        name = state_timer_name(step.after.id)
        armed = None
        if step.timer is not None:
            event, ms = step.timer
            armed = TimerRow(self._kind, actor, name, event.value, step.after.id,
                             step.after.revision, self.now + ms, self._mono + ms,
                             self._epoch)  # fmt: skip
        self._timers[(actor, name)] = armed

    def entry(self, entry: Entry) -> str:
        """Append a journal event outside the lifecycle; its ID."""
        return self.event(entry.owner, entry.event_type, dict(entry.payload), entry.revision,
                          entry.actor_id)  # fmt: skip

    def event(self, owner: EventOwner, event_type: str, payload: dict[str, Any],
              revision: int | None = None, actor_id: str | None = None) -> str:  # fmt: skip
        """Append one journal event whose body the caller built for it (no `Entry`, no copy);
        its ID."""
        event_id = _append(self.conn, owner, event_type, payload, self.now, revision, actor_id)
        self.event_ids.append(event_id)
        return event_id

    # -- one table row, already checked: the Session's hot path ---------------------------
    # `apply` plans a `Change` (any number of events, touch, timers, a caller's expected
    # revision) and writes it. A kind whose step is one row it already found with
    # `table.step` (refusals raised, nothing written) writes it with `move`/`create`: the
    # same statements, event and receipt target as `apply` of that one-event change with
    # `timer=False`, without building the change and its plan (a turn's dispatch, start and
    # end run this several times per turn, in the writer thread).

    def move(self, rows: Rows[R], row: Transition[Any, Any], before: R, after: R,
             payload: Mapping[str, Any] | None = None, *, owner: EventOwner | None = None,
             receipt: bool | None = None, event_actor: str | None = None,
             write: bool = True, stored: R | None = None,
             owner_revision: int | None = None) -> None:  # fmt: skip
        """Write `after`, the row `row` moves `before` to (at `row.target`, one revision
        on): compare-and-set on `before`'s revision, `row`'s event (`rows.payload`, then
        `payload`), its receipt target (`receipt`: None = as the row says). Raises
        `storage_conflict` when the row moved underneath its actor.

        `write=False` appends the event and target only: the caller writes the row with its
        next move in the same transaction, passing the row as stored (`stored`, the first
        unwritten move's `before`), whose revision that UPDATE compares and sets from (two
        steps of one turn in one transaction, one UPDATE: `_store.turn_step`).
        `owner_revision`: the event's aggregateRevision when `owner` is another aggregate
        than the row's (a Session's journal holds its turns' events: its revision, so an
        owner's revisions never go back)."""
        if write:
            self.write_row(rows, before if stored is None else stored, after)
        revision = after.revision
        if row.emits is not None:
            body = rows.payload(row, after)
            if payload:
                body = {**body, **payload}
            at = revision if owner_revision is None else owner_revision
            self.event(owner or rows.owner(after), row.emits, body, at, event_actor)
        if row.receipt if receipt is None else receipt:
            self.targets.append(ReceiptTarget(rows.resource, after.id, "updated",
                                              before.revision, revision))  # fmt: skip

    def write_row(self, rows: Rows[R], stored: R, after: R) -> None:
        """Write the row moves with `write=False` left unwritten: compare-and-set from the
        row as stored to `after` (their events and targets are appended already)."""
        if not rows.update(self.conn, stored, after, self.now):
            raise _conflict(rows, after.id)

    def create(self, rows: Rows[R], row: Transition[Any, Any], record: R, *,
               owner: EventOwner | None = None,
               owner_revision: int | None = None) -> None:  # fmt: skip
        """Insert `record`, made by the table's creation row `row` (its caller checked;
        `record` at `row.target`, revision 1): the row, its event, its receipt target
        (`owner_revision` as for `move`)."""
        rows.insert(self.conn, record, self.now)
        if row.emits is not None:
            at = 1 if owner_revision is None else owner_revision
            self.event(owner or rows.owner(record), row.emits, rows.payload(row, record), at)
        if row.receipt:
            self.targets.append(ReceiptTarget(rows.resource, record.id, "created", None, 1))

    def wake(self, wake: Wake) -> None:
        """Arm (or, `cancel`, disarm) the write path's actor's wake-up `wake.name`."""
        armed = None
        if not wake.cancel:
            due = wake.due_wall_ms(self.now)
            armed = TimerRow(self._kind, self._actor, wake.name, None, wake.subject, None, due,
                             self._mono + (due - self.now), self._epoch)  # fmt: skip
        self._timers[(self._actor, wake.name)] = armed

    def mark(self) -> tuple[int, int, dict[tuple[str, str], TimerRow | None]]:
        """Where the transaction is, to `rewind` to after a savepoint rolled back."""
        return len(self.event_ids), len(self.targets), dict(self._timers)

    def rewind(self, mark: tuple[int, int, dict[tuple[str, str], TimerRow | None]]) -> None:
        events, targets, timers = mark
        del self.event_ids[events:], self.targets[targets:]
        self._timers = dict(timers)

    def finish(self) -> tuple[list[tuple[str, str]], list[TimerRow]]:
        """Write the timer rows; what to mirror after the commit."""
        armed: list[TimerRow] = []
        for (actor, name), timer in self._timers.items():
            if timer is None:
                disarm_timer(self.conn, self._kind, actor, name)
            else:  # arming replaces the row of the same name
                arm_timer(self.conn, timer)
                armed.append(timer)
        return list(self._timers), armed


class WritePath:
    """One actor's way to storage: `await path.commit(write)`. Made by the kind's runtime
    (`Runtime.write_path`); `kind` and `actor_id` name whose timers the writes arm."""

    def __init__(self, store: Any, clock: Clock, timers: DurableTimers, kind: str,
                 actor_id: str) -> None:  # fmt: skip
        self.store = store
        self.clock = clock
        self.timers = timers
        self.kind = kind
        self.actor_id = actor_id

    def _open(self, conn: sqlite3.Connection, now: int, mono: int) -> Tx:
        return Tx(conn, self.kind, self.actor_id, now, mono, self.store.node_epoch)

    async def transact(self, body: Callable[[Tx], T], *, envelope: EnvelopeOf | None = None,
                       replayable: bool = False) -> T:  # fmt: skip
        """Run `body(tx)` as one storage transaction; its value once committed. Raises what
        `body` raised (nothing written) and what the storage actor raises. `envelope`: what
        its events descend from, read on the transaction's connection (see the module).
        `replayable`: `body` may run twice (its first run rolled back, see docs/storage.md);
        only for a body whose Python state is rebuilt at each run."""
        now, mono = self.clock.wall_ms(), self.clock.monotonic_ms()

        def run(conn: sqlite3.Connection) -> tuple[T, Any]:
            with _context(conn, envelope):
                tx = self._open(conn, now, mono)
                value = body(tx)
                return value, tx.finish()

        value: T
        value, timers = await self.store.write(run, replayable=replayable)
        self.timers.committed(self.kind, *timers)
        return value

    async def mutate(self, command: Command, body: Callable[[Tx], Any], *,
                     project_id: str | None = None, correlation_id: str | None = None,
                     envelope: EnvelopeOf | None = None) -> MutationResult:  # fmt: skip
        """`body(tx)` as the client mutation `command`: idempotent by its key, with its
        receipt (the transaction's targets) and `body`'s value as its stored result. A
        retried command gets its stored result (`delivery: duplicate`) without running.
        Its events get the command's correlation (`correlation_id`, else its commandId) in
        `envelope`'s context."""
        now, mono = self.clock.wall_ms(), self.clock.monotonic_ms()
        key = MutationKey(command.actor_id, command.operation, command.command_id)
        box: dict[str, Any] = {}

        def run(conn: sqlite3.Connection) -> MutationResult:
            def applied(c: sqlite3.Connection) -> Applied:
                tx = self._open(c, now, mono)
                value = body(tx)
                box["timers"] = tx.finish()
                return Applied(value, targets=tuple(tx.targets), event_ids=tuple(tx.event_ids),
                               project_id=project_id)  # fmt: skip

            with _context(conn, envelope):
                return run_mutation(conn, key=key, input_digest=command.digest, now_ms=now,
                                    apply=applied, correlation_id=correlation_id)  # fmt: skip

        result: MutationResult = await self.store.write(run)
        if result.delivery == "new":
            self.timers.committed(self.kind, *box["timers"])
        return result

    async def commit(self, write: Write) -> Committed:
        """Apply `write` in one storage transaction (see the module). Raises the tables'
        refusals (nothing written), `storage_conflict` when a row moved underneath its actor,
        what the storage actor raises."""
        refusal: MaiaError | None = None
        steps: list[_Step] = []
        try:
            steps = [plan_change(c) for c in write.changes]
        except MaiaError as error:
            if write.command is None:
                raise
            refusal = error
        records = tuple(s.after for s in steps)
        box: dict[str, Any] = {}

        envelope = Envelope(write.correlation_id, write.causation_id)

        def body(tx: Tx) -> Any:
            with event_context(envelope):
                return _body(tx)

        def _body(tx: Tx) -> Any:
            if refusal is not None:
                raise refusal
            for step in steps:
                tx.execute(step)
            for entry in write.journal:
                tx.entry(entry)
            if write.sql is not None:
                write.sql(tx.conn, records)
            for wake in write.wakes:
                tx.wake(wake)
            tx.targets.extend(write.extra_targets)
            value = write.result(tx.conn, records) if write.result is not None else None
            box["events"], box["value"] = tuple(tx.event_ids), value
            return value

        command = write.command
        if command is None:
            value = await self.transact(body)
            return Committed(records, None, box["events"], value)
        project_id = next((c.rows.owner(c.after).project_id for c in write.changes), None)
        result = await self.mutate(command, body, project_id=project_id,
                                   correlation_id=write.correlation_id)  # fmt: skip
        if result.delivery != "new":
            befores = tuple(c.before for c in write.changes)
            return Committed(befores, result, (), result.result)
        return Committed(records, result, box["events"], box["value"])


EnvelopeOf = Callable[[sqlite3.Connection], Envelope]  # a write's envelope, read in it


def _context(conn: sqlite3.Connection,
             envelope: EnvelopeOf | None) -> contextlib.AbstractContextManager[Any]:  # fmt: skip
    return contextlib.nullcontext() if envelope is None else event_context(envelope(conn))


def _execute(conn: sqlite3.Connection, step: _Step, now: int, event_ids: list[str],
             targets: list[ReceiptTarget]) -> None:  # fmt: skip
    change = step.change
    rows = change.rows
    after = step.after
    if change.before is None:
        rows.insert(conn, after, now)
    elif not rows.update(conn, change.before, after, now):
        raise _conflict(rows, after.id)
    owner = rows.owner(after)
    receipt = False
    for row, revision in step.rows:
        receipt = receipt or row.receipt
        if row.emits is not None:
            body = {**rows.payload(row, after), **change.payload}
            at = revision if change.owner_revision is None else change.owner_revision
            event_ids.append(_append(conn, owner, row.emits, body, now, at,
                                     change.event_actor))  # fmt: skip
    if change.receipt if change.receipt is not None else receipt:
        prior = None if change.before is None else change.before.revision
        what = "created" if change.before is None else "updated"
        targets.append(ReceiptTarget(rows.resource, after.id, what, prior, after.revision))


def _conflict(rows: Rows[Any], row_id: str) -> MaiaError:
    return MaiaError("storage_conflict", f"{rows.resource} {row_id} changed underneath its actor",
                     {"resource": rows.resource, "id": row_id})  # fmt: skip


def _append(conn: sqlite3.Connection, owner: EventOwner, event_type: str,
            payload: dict[str, Any], now: int, revision: int | None,
            actor_id: str | None) -> str:  # fmt: skip
    record = append_event(
        conn, owner_id=owner.owner_id, owner_type=owner.owner_type, event_type=event_type,
        payload=payload, now_ms=now, aggregate_revision=revision, project_id=owner.project_id,
        session_id=owner.session_id, actor_id=actor_id,
    )  # fmt: skip
    return record.event_id


def default_payload(row: Transition[Any, Any], after: Any) -> dict[str, Any]:
    """`{"state": target, "from": state}`: what most kinds' lifecycle events carry."""
    source = row.state.value if row.state is not None else None
    return {"state": row.target.value, "from": source}


def recovery_changes(
    table: TransitionTable[Any, Any], rows: Rows[Any], records: Sequence[Any],
    payload: Mapping[str, Any] | None = None,
) -> tuple[Change[Any], ...]:  # fmt: skip
    """The changes a Node start makes to `records` by the table's recovery column: each
    record in a state with a recovery path gets the table's `recover_with` event."""
    event = table.recover_with
    if event is None:
        return ()
    return tuple(
        Change(
            rows, table, record, record, (event,), NODE, payload=payload or {}, actor_id=record.id
        )
        for record in records
        if record.state in table.recovery_states
    )
