"""A test-only kind, "lamp", built exactly as docs/actors.md tells a kind author to: its
table, its SQL, its pure core, and `AggregateKind`. It proves the runtime's API end to end
on real storage (tests/actors/test_kind.py).
"""

from __future__ import annotations

import enum
import sqlite3
from collections.abc import Sequence
from typing import Any

import attrs
import trio

from actors import (
    CLIENT,
    NODE,
    AggregateKind,
    Command,
    Decision,
    Effect,
    Entry,
    EventOwner,
    Fired,
    Transition,
    TransitionTable,
    Wake,
    creation,
    default_payload,
    row,
)
from maia.protocol import MaiaError

AUTO_OFF_MS = 10_000


class LampState(enum.Enum):
    OFF = "off"
    ON = "on"
    BURNT = "burnt"


class LampEvent(enum.Enum):
    CREATE = "lamp.create"
    SWITCH_ON = "lamp.switch_on"
    SWITCH_OFF = "lamp.switch_off"
    AUTO_OFF = "lamp.auto_off"
    POWER_LOST = "lamp.power_lost"
    BURN = "lamp.burn"


_s, _e = LampState, LampEvent
# fmt: off
LAMP_TABLE: TransitionTable[LampState, LampEvent] = TransitionTable(
    "lamp",
    states=LampState,
    events=LampEvent,
    initial=LampState.OFF,
    terminal=(LampState.BURNT,),
    rows=[
        row(
            _s.OFF,
            _e.SWITCH_ON,
            _s.ON,
            CLIENT,
            emits="lamp.on",
            receipt=True,
            timeout_ms=AUTO_OFF_MS,
            on_timeout=_e.AUTO_OFF,
            recovery=_s.OFF,
        ),
        row(_s.ON, _e.SWITCH_OFF, _s.OFF, CLIENT, emits="lamp.off", receipt=True),
        row(_s.ON, _e.AUTO_OFF, _s.OFF, NODE, emits="lamp.off"),
        row(_s.ON, _e.POWER_LOST, _s.OFF, NODE, emits="lamp.off"),
        row(_s.OFF, _e.BURN, _s.BURNT, NODE, emits="lamp.burnt"),
    ],
    create=creation(_e.CREATE, _s.OFF, CLIENT, emits="lamp.created", receipt=True),
    recover_with=LampEvent.POWER_LOST,
)
# fmt: on


@attrs.frozen
class Lamp:
    id: str
    name: str
    state: LampState = LampState.OFF
    revision: int = 0


# -- its SQL ----------------------------------------------------------------------------------

LAMP_DDL = (
    "CREATE TABLE IF NOT EXISTS lamps (lamp_id TEXT PRIMARY KEY, name TEXT NOT NULL,"
    " state TEXT NOT NULL, revision INTEGER NOT NULL, updated_ms INTEGER NOT NULL)"
)


class LampRows:
    resource = "lamp"

    def insert(self, conn: sqlite3.Connection, record: Lamp, now_ms: int) -> None:
        values = (record.id, record.name, record.state.value, record.revision, now_ms)
        conn.execute("INSERT INTO lamps VALUES (?, ?, ?, ?, ?)", values)

    def update(self, conn: sqlite3.Connection, before: Lamp, after: Lamp, now_ms: int) -> bool:
        return conn.execute(
            "UPDATE lamps SET name = ?, state = ?, revision = ?, updated_ms = ?"
            " WHERE lamp_id = ? AND revision = ?",
            (after.name, after.state.value, after.revision, now_ms, after.id, before.revision),
        ).rowcount == 1  # fmt: skip

    def owner(self, record: Lamp) -> EventOwner:
        return EventOwner(record.id, "lamp")

    def payload(self, row: Transition[Any, Any], after: Lamp) -> dict[str, Any]:
        return default_payload(row, after)


LAMP_ROWS = LampRows()


def load_lamp(conn: sqlite3.Connection, lamp_id: str) -> Lamp | None:
    found = conn.execute(
        "SELECT lamp_id, name, state, revision FROM lamps WHERE lamp_id = ?", (lamp_id,)
    ).fetchone()
    return None if found is None else Lamp(found[0], found[1], LampState(found[2]), found[3])


def lamps_in(conn: sqlite3.Connection, states: Sequence[str]) -> list[Lamp]:
    marks = ", ".join("?" * len(states))
    rows = conn.execute(
        f"SELECT lamp_id, name, state, revision FROM lamps WHERE state IN ({marks})", states
    ).fetchall()
    return [Lamp(r[0], r[1], LampState(r[2]), r[3]) for r in rows]


# -- its messages and pure core ---------------------------------------------------------------


@attrs.frozen
class Create:
    command: Command
    name: str


@attrs.frozen
class Switch:
    command: Command
    on: bool


@attrs.frozen
class Remind:
    at_wall_ms: int


@attrs.frozen
class Explode:
    """Start an effect that raises (a bug): the actor must crash and restart."""


@attrs.frozen
class Hold:
    """Start an effect that runs until `release` is set (it vetoes passivation)."""

    release: trio.Event = attrs.field(eq=False)


@attrs.frozen
class Restarted:
    pass


LampMessage = Create | Switch | Remind | Explode | Hold | Restarted | Fired


def _missing(lamp_id: str) -> MaiaError:
    return MaiaError("resource_not_found", f"lamp {lamp_id} does not exist",
                     {"resource": "lamp", "id": lamp_id})  # fmt: skip


async def _explode() -> None:
    raise RuntimeError("the bulb shattered")


def _hold(release: trio.Event) -> Effect:
    async def run() -> None:
        await release.wait()

    return Effect("hold", run)


class LampCore:
    table = LAMP_TABLE
    rows = LAMP_ROWS

    def __init__(self) -> None:
        self.restarts = 0
        self.refusals: list[MaiaError] = []  # one refuses each reminder fired, in turn

    def decide(self, record: Lamp | None, message: LampMessage, now_ms: int) -> Decision[Lamp]:
        def result(lamp: Lamp) -> Any:
            return {"lamp": {"id": lamp.id, "state": lamp.state.value, "revision": lamp.revision}}

        match message:
            case Create(command, name):
                if record is not None:
                    raise MaiaError("conflict", "lamp exists", {"resource": "lamp"})
                new = Lamp(command.command_id.replace("cmd", "lamp"), name)
                return Decision(new, (LampEvent.CREATE,), CLIENT, command=command, result=result)
        if record is None:
            raise _missing("?")
        match message:
            case Switch(command, on):
                event = LampEvent.SWITCH_ON if on else LampEvent.SWITCH_OFF
                return Decision(record, (event,), CLIENT, command=command, result=result)
            case Remind(at):
                return Decision(wakes=(Wake("remind", at_wall_ms=at),), reply="armed")
            case Fired(name="remind"):
                if self.refusals:
                    raise self.refusals.pop(0)  # its write failed (a full disk), say
                entry = Entry(LAMP_ROWS.owner(record), "lamp.reminded", {"at": now_ms})
                return Decision(journal=(entry,))
            case Fired(event=event) if event is not None:
                return Decision(record, (LampEvent(event),))  # the table's on_timeout
            case Explode():
                return Decision(effects=(Effect("explode", _explode),))
            case Hold(release):
                return Decision(effects=(_hold(release),))
            case Restarted():
                self.restarts += 1
                return Decision()
        raise TypeError(f"not a lamp message: {message!r}")


def lamp_kind(
    core: LampCore, *, recover: bool = False, idle_s: float = 300.0
) -> AggregateKind[Lamp, Any]:
    return AggregateKind(
        "lamp", core, load_lamp, restart=Restarted,
        in_states=lamps_in if recover else None, idle_s=idle_s,
    )  # fmt: skip
