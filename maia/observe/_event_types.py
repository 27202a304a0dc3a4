"""Which event types an observation can carry, and the check of a query's `eventTypes`.

An observation is a journal event (authoritative) or one of the records the Node sends
without storing them (diagnostic): a running turn's live `item.started` / `item.delta` and
a worker's `worker.diagnostic`. A query naming any other type (`turn.bogus`, a typo of
`turn.completed`) would be accepted and then match nothing, silently; it is refused as
`events.read` refuses it: `validation_failed` naming `query.eventTypes[i]`, with the nearest
known type when a typo explains it.

The journal's types are the service layer's to list (`maia.service.journal_event_types`, a
face beside this one): the Node hands them to the hub (`open_hub(journal_types=...)`).
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from typing import Final

from maia.core import MaiaError

from ._shape import DIAGNOSTIC_EVENT

LIVE_TYPES: Final = frozenset({"item.started", "item.delta", DIAGNOSTIC_EVENT})
"""The types of the records a stream carries that the journal never holds."""


def check_observed_types(
    path: str, event_types: Sequence[str], journal_types: frozenset[str]
) -> None:
    """Raises `validation_failed` naming `path[i]` for the first type no observation
    carries (neither in `journal_types` nor live)."""
    known = journal_types | LIVE_TYPES
    for i, event_type in enumerate(event_types):
        if event_type in known:
            continue
        close = difflib.get_close_matches(event_type, sorted(known), n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        where = f"{path}[{i}]"
        detail = f"{event_type!r} is not an event type a Node emits{hint}"
        details = {"path": where, "detail": detail}
        raise MaiaError("validation_failed", f"{where}: {detail}", details)
