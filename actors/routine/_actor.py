"""The RoutineActor: one per routine, the only writer of its routine and fire rows.

Each message is planned on the routine as storage holds it (the pure core, `_store.plan`)
and committed through the runtime's one write path as ONE transaction: the proof a confirm
spends, the rows, their events, the receipt of a client command, and the routine's durable
`slot` timer, re-armed at its next tick (nextFireAt, or at once for an unclaimed manual
fire). A claim is the `slot` timer firing: it records the slot's fire and advances
nextFireAt in that one transaction, compare-and-set on the slot it judged, so a slot fires
at most once across restarts. The launch itself is the scheduler's (`_scheduler`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any, Final

import attrs

from actors import Command, Fired, Wake, Write, WritePath
from maia.core import Clock, MaiaError
from maia.protocol import to_json
from storage import ReceiptTarget, append_event

from ._events import Disable, Event, Pause, Recover, Resume, Run, Tick
from ._model import Core
from ._sql import (
    RoutineRow,
    get_fire,
    get_routine,
    insert_routine,
    load_core,
    require_room,
    scheduler_send_receipts,
    spend_proof,
)
from ._store import Planned, persist, plan
from ._views import fire_view, routine_view

SLOT: Final = "slot"
HELD: Final = False  # no admission hold exists in this Node yet (the judgement is wired)
SCHEDULER_PREFIX: Final = "actor_node-automation_routine-scheduler_"


def scheduler_actor(routine_id: str) -> str:
    """The Node's automation acting for one routine (spec: one ID per purpose)."""
    return SCHEDULER_PREFIX + routine_id


def send_command_id(fire_id: str) -> str:
    """The scheduler's turn.send commandId for a fire: its receipt is the recovery evidence."""
    return f"{fire_id}.turn"


def create_command_id(fire_id: str) -> str:
    return f"{fire_id}.session"


@attrs.frozen
class Spend:
    """The preview proof a confirm spends inside its write."""

    proof: str
    input_digest: str


@attrs.frozen
class CreateRoutine:
    command: Command
    routine: RoutineRow
    spend: Spend


@attrs.frozen
class ChangeRoutine:
    """A client's pause, resume, disable or run (a run answers with its fire)."""

    command: Command
    event: Pause | Resume | Disable | Run
    spend: Spend | None = None


@attrs.frozen
class LaunchAnswer:
    """What the scheduler's launch of a fire got (Attached, Launched or LaunchRefused)."""

    event: Event


@attrs.frozen
class RecoverFires:
    """The Node started: resolve the claimed launching fires left by the previous run."""


Message = CreateRoutine | ChangeRoutine | LaunchAnswer | RecoverFires | Fired


def _wakes(core: Core, now_ms: int) -> tuple[Wake, ...]:
    due = core.wake_ms
    if due is None:
        return (Wake(SLOT, cancel=True),)
    return (Wake(SLOT, at_wall_ms=max(due, now_ms)),)


class RoutineActor:
    """One routine's actor (spawned by the registry; state lives in storage)."""

    def __init__(self, routine_id: str, path: WritePath, clock: Clock,
                 poke: Callable[[], None]) -> None:  # fmt: skip
        self.routine_id = routine_id
        self.path = path
        self.clock = clock
        self.poke = poke  # wake the scheduler: there is something to launch

    async def handle(self, message: Message) -> Any:
        match message:
            case CreateRoutine():
                return await self._create(message)
            case Fired(name=name) if name == SLOT:
                await self._step(Tick(held=HELD), None, None)
                self.poke()
                return None
            case Fired():
                return None  # a timer this kind does not arm
            case ChangeRoutine(command=command, event=event, spend=spend):
                return await self._step(event, command, spend)
            case LaunchAnswer(event=event):
                return await self._step(event, None, None)
            case RecoverFires():
                return await self._recover()
        raise TypeError(f"not a routine message: {message!r}")

    def _spend(self, conn: sqlite3.Connection, command: Command, spend: Spend) -> None:
        spend_proof(conn, proof=spend.proof, actor_id=command.actor_id,
                    operation_id=command.operation, input_digest=spend.input_digest,
                    command_id=command.command_id, clock=self.clock,
                    node_epoch=self.path.store.node_epoch)  # fmt: skip

    async def _create(self, message: CreateRoutine) -> Any:
        row, command = message.routine, message.command

        def sql(conn: sqlite3.Connection, _: tuple[Any, ...]) -> None:
            self._spend(conn, command, message.spend)
            if get_routine(conn, row.routine_id) is not None:
                raise MaiaError("storage_conflict", f"routine {row.routine_id} already exists",
                                {"routineId": row.routine_id})  # fmt: skip
            require_room(conn, row.project_id)  # the limit, judged where it inserts
            insert_routine(conn, row)
            append_event(
                conn, owner_id=row.routine_id, owner_type="routine",
                event_type="routine.created", payload={"routine": to_json(routine_view(row))},
                now_ms=row.created_ms, aggregate_revision=1, project_id=row.project_id,
                actor_id=command.actor_id,
            )  # fmt: skip

        wake = (Wake(SLOT, at_wall_ms=row.next_fire_ms),) if row.next_fire_ms else ()
        return await self.path.commit(Write(
            command=command, sql=sql, wakes=wake,
            result=lambda conn, _: {"routine": to_json(routine_view(row))},
            extra_targets=(ReceiptTarget("routine", row.routine_id, "created", None, 1),),
        ))  # fmt: skip

    async def _step(self, event: Event, command: Command | None, spend: Spend | None) -> Any:
        now = self.clock.wall_ms()
        row, core = await self.path.store.read(lambda c: load_core(c, self.routine_id))
        refusal: MaiaError | None = None
        steps: tuple[Planned, ...] = ()
        try:
            steps = plan(core, event, now, catch_up=isinstance(event, Pause | Disable))
        except MaiaError as error:
            if command is None:
                raise
            refusal = error  # raised inside the mutation: a retried command gets its result
        actor = command.actor_id if command is not None else scheduler_actor(self.routine_id)

        def sql(conn: sqlite3.Connection, _: tuple[Any, ...]) -> None:
            if refusal is not None:
                raise refusal
            if command is not None and spend is not None:
                self._spend(conn, command, spend)
            persist(conn, row, steps, now, actor)

        after = steps[-1].after if steps else core
        return await self.path.commit(Write(
            command=command, sql=sql, wakes=_wakes(after, now) if steps else (),
            result=lambda conn, _: self._result(conn, event),
            extra_targets=self._targets(event, core, after),
        ))  # fmt: skip

    def _result(self, conn: sqlite3.Connection, event: Event) -> Any:
        if isinstance(event, Run):
            fire = get_fire(conn, event.fire_id)
            assert fire is not None
            return {"fire": to_json(fire_view(fire))}
        routine = get_routine(conn, self.routine_id)
        assert routine is not None
        return {"routine": to_json(routine_view(routine))}

    def _targets(self, event: Event, before: Core, after: Core) -> tuple[ReceiptTarget, ...]:
        if isinstance(event, Run):
            return (ReceiptTarget("routine_fire", event.fire_id, "created", None, 1),)
        if isinstance(event, Pause | Resume | Disable):
            return (ReceiptTarget("routine", self.routine_id, "updated", before.revision,
                                  after.revision),)  # fmt: skip
        return ()

    async def _recover(self) -> Any:
        def evidence(conn: sqlite3.Connection) -> Any:
            _, core = load_core(conn, self.routine_id)
            claimed = [f for f in core.fires if f.claimed_ms is not None]
            rows = [r for r in (get_fire(conn, f.fire_id) for f in claimed) if r is not None]
            return scheduler_send_receipts(conn, rows, scheduler_actor, send_command_id)

        receipts = await self.path.store.read(evidence)
        return await self._step(Recover(receipts), None, None)
