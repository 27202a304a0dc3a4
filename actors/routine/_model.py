"""What a routine's scheduling knows: its fires (with IDs that name their slot or run) and
the core state the pure step moves (`_core`)."""

from __future__ import annotations

import enum
import hashlib

import attrs

from ._schedule import Schedule
from ._table import FireState, RoutineState


class Trigger(enum.Enum):
    CRON = "cron"
    MANUAL = "manual"


def cron_fire_id(routine_id: str, slot_ms: int) -> str:
    """A cron fire's ID names its slot: the same slot can never get a second row."""
    return "fire_" + hashlib.sha256(f"{routine_id}\0{slot_ms}".encode()).hexdigest()[:32]


def manual_fire_id(actor_id: str, command_id: str) -> str:
    """A manual fire's ID derives from the actor and the run's commandId (spec)."""
    return "fire_" + hashlib.sha256(f"{actor_id}\0{command_id}".encode()).hexdigest()[:32]


@attrs.frozen
class Fire:
    """A fire the core still cares about (launching, or started with its first turn open)."""

    fire_id: str
    trigger: Trigger
    scheduled_ms: int
    state: FireState = FireState.LAUNCHING
    claimed_ms: int | None = None  # None: a manual fire no tick has claimed yet
    reason: str | None = None
    session_id: str | None = None
    turn_id: str | None = None
    attempts: int = 0  # launch attempts this Node run (fresh claims have none)

    @property
    def unsettled(self) -> bool:
        """Launching, or started with its first turn not finished: a new slot overlaps it."""
        return self.state in (FireState.LAUNCHING, FireState.STARTED)


@attrs.frozen
class Core:
    """What one routine's scheduling knows."""

    routine_id: str
    state: RoutineState
    revision: int
    schedule: Schedule
    next_fire_ms: int | None
    fires: tuple[Fire, ...] = ()  # unsettled only, oldest first

    def fire(self, fire_id: str) -> Fire | None:
        return next((f for f in self.fires if f.fire_id == fire_id), None)

    @property
    def busy(self) -> bool:
        return any(f.unsettled for f in self.fires)

    @property
    def wake_ms(self) -> int | None:
        """When its next tick is due: now-ish for an unclaimed manual fire, else nextFireAt."""
        if any(f.claimed_ms is None and f.state is FireState.LAUNCHING for f in self.fires):
            return 0
        return self.next_fire_ms
