"""The console's local picture of the Node's routines, for completing routine IDs and names.

Like the Session cache: seeded by `routine.list` at start (bounded pages), kept fresh by the
live feed (`routine.created`, and any routine event that carries the routine's view), never a
request per keystroke. A routine the cache does not know still runs: the Node resolves the
exact ID the user typed.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from ._cache import FeedEvent

MAX_CACHED_ROUTINES = 1_000


@attrs.frozen
class CachedRoutine:
    """What completion shows for one routine."""

    routine_id: str
    name: str
    state: str


class RoutineCache:
    """Routine IDs, names and states, bounded (least recently touched forgotten first)."""

    def __init__(self, limit: int = MAX_CACHED_ROUTINES) -> None:
        self._limit = limit
        self._routines: OrderedDict[str, CachedRoutine] = OrderedDict()

    def __len__(self) -> int:
        return len(self._routines)

    def seed(self, routines: Iterable[Mapping[str, Any]]) -> None:
        """Add routines in `routine.list`'s wire form."""
        for wire in routines:
            self._put_wire(wire)

    def apply(self, event: FeedEvent) -> bool:
        """Take a routine event into account; True when the cache changed."""
        if not event.event_type.startswith("routine."):
            return False
        wire = event.payload.get("routine")
        return isinstance(wire, Mapping) and self._put_wire(wire)

    def matches(self, prefix: str) -> list[tuple[str, CachedRoutine]]:
        """(completion text, routine) for each ID or name starting with `prefix`; IDs of
        disabled routines last, since they can only be shown."""
        found: list[tuple[str, CachedRoutine]] = []
        for entry in sorted(self._routines.values(), key=lambda r: (r.state == "disabled", r.name)):
            if entry.routine_id.startswith(prefix) or entry.name.startswith(prefix):
                found.append((entry.routine_id, entry))
        return found

    def _put_wire(self, wire: Mapping[str, Any]) -> bool:
        routine_id, name, state = wire.get("routineId"), wire.get("name"), wire.get("state")
        if not (isinstance(routine_id, str) and isinstance(name, str) and isinstance(state, str)):
            return False
        entry = CachedRoutine(routine_id, name, state)
        changed = self._routines.get(routine_id) != entry
        self._routines[routine_id] = entry
        self._routines.move_to_end(routine_id)
        while len(self._routines) > self._limit:
            self._routines.popitem(last=False)
        return changed
