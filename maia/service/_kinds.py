"""The kinds of aggregate the Node runs, in start order.

A kind may use what an earlier one provides (the Session kind runs on the worker pool).
Adding a kind is one line here; the runtime starts it and the journal's event types
(`_event_types`) take its tables' events from it, so nothing else lists the kinds.
"""

from __future__ import annotations

from typing import Any, Final

from actors import WORKERS, Kind
from actors.machine import MACHINES
from actors.routine import ROUTINES
from actors.session import SESSIONS
from actors.webhook import WEBHOOKS

KINDS: Final[tuple[Kind[Any], ...]] = (WORKERS, MACHINES, SESSIONS, WEBHOOKS, ROUTINES)
