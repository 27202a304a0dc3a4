"""The events the pure routine core takes and the actions it returns (`_core.step`)."""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from ._model import Fire
from ._table import FailReason, FireEvent, RoutineState

# Events ---------------------------------------------------------------------------------


@attrs.frozen
class Tick:
    """A scheduler tick: claim what is due. `held`: admission is held Node-wide; `manual`:
    also claim unclaimed manual fires (a catch-up before a pause claims cron slots only)."""

    held: bool = False
    manual: bool = True


@attrs.frozen
class Pause:
    expected_revision: int


@attrs.frozen
class Resume:
    expected_revision: int


@attrs.frozen
class Disable:
    expected_revision: int


@attrs.frozen
class Run:
    """A confirmed manual run: record a launching fire for the next tick to claim."""

    fire_id: str
    expected_revision: int
    held: bool = False


@attrs.frozen
class Attached:
    """The launch created the fire's Session (written before its turn is sent)."""

    fire_id: str
    session_id: str


@attrs.frozen
class Launched:
    fire_id: str
    session_id: str
    turn_id: str


@attrs.frozen
class LaunchRefused:
    """The launch failed: `saturated` retries until the deadline; any other reason is final."""

    fire_id: str
    reason: FailReason


@attrs.frozen
class TurnSettled:
    """The first turn of a started fire finished: the fire no longer blocks new slots."""

    fire_id: str


@attrs.frozen
class Recover:
    """The Node restarted: `receipts` maps a fire to the turn its scheduler's turn.send
    receipt names on the fire's attached Session, for the fires that have one."""

    receipts: Mapping[str, str]


Event = (
    Tick
    | Pause
    | Resume
    | Disable
    | Run
    | Attached
    | Launched
    | LaunchRefused
    | TurnSettled
    | Recover
)


# Actions --------------------------------------------------------------------------------


@attrs.frozen
class RecordFire:
    """Insert or update a fire row (and append the table row's event)."""

    fire: Fire
    event: FireEvent
    emits: str


@attrs.frozen
class SetRoutine:
    """Write the routine's state, revision and nextFireAt (and the table row's event)."""

    state: RoutineState
    revision: int
    next_fire_ms: int | None
    emits: str


@attrs.frozen
class AttachSession:
    """Write the Session a launch created onto its fire, before the turn is sent."""

    fire_id: str
    session_id: str


@attrs.frozen
class SlotsOmitted:
    """A claim passed over more slots than it records; the older ones end before `before_ms`."""

    before_ms: int


Action = RecordFire | SetRoutine | AttachSession | SlotsOmitted
