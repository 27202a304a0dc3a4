"""The journal's event types: every type a Node writes, so a filter naming another is refused.

A webhook's `eventTypes` and `events.read`'s `eventTypes` match event types exactly; a type
no Node emits (`turn.bogus`, a typo of `turn.completed`) would be accepted and then match
nothing, silently. The types come from where they are declared: the `emits` of every
lifecycle table of every kind the Node runs (`_kinds.kind_event_types`: the kinds opened on
demand declare theirs, held to their tables by a test), each operation's `eventTypes`,
and the few events code writes beside a table (listed below). A test scans the source for
every event-writing call, a table row's `emits` included, and finds its type here, so a new
kind or event cannot be missed.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from typing import Final

from maia.core import MaiaError
from maia.protocol import REGISTRY

from ._kinds import kind_event_types

_WRITTEN_BESIDE_TABLES: Final = frozenset({
    "approval.requested", "approval.allowed", "approval.denied", "approval.withdrawn",
    "item.completed",  # actors/session: a finished item of a turn
    "session.status.changed", "session.activity.changed",
    "session.conversation", "session.conversation.replaced",
    "machine.enrollment_issued", "machine.enrolled", "machine.revoked",
    "machine.recovery_required",
    "routine.created", "routine.fire_attached", "routine.slots_omitted",
    "worker.diagnostics.gap",  # maia.observe's DIAGNOSTICS_GAP_EVENT (a face beside this one)
})  # fmt: skip
"""Events code writes outside a table's rows (`emit`, `journal`, `append_event`)."""

_WEBHOOK_OWN_PREFIX: Final = "webhook."  # the outbox never delivers a webhook's own events
_EVERY_TYPE: Final = "*"


@functools.cache
def journal_event_types() -> frozenset[str]:
    """Every event type a Node writes to its journal."""
    declared = {t for op in REGISTRY for t in op.event_types}
    return kind_event_types() | declared | _WRITTEN_BESIDE_TABLES


def _refused(path: str, event_type: str, why: str) -> MaiaError:
    detail = f"{event_type!r} {why}"
    return MaiaError("validation_failed", f"{path}: {detail}", {"path": path, "detail": detail})


def _unknown(path: str, event_type: str, candidates: Iterable[str]) -> MaiaError:
    """A type no Node emits, with the nearest known one when a typo explains it."""
    import difflib  # only for a refusal: ~0.14 MiB of a Node that never refuses one

    close = difflib.get_close_matches(event_type, sorted(candidates), n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return _refused(path, event_type, f"is not an event type a Node emits{hint}")


def check_filter_types(path: str, event_types: Sequence[str]) -> None:
    """Raises `validation_failed` naming `path[i]` for the first type the journal never
    holds (`events.read`'s filter)."""
    known = journal_event_types()
    for i, event_type in enumerate(event_types):
        if event_type not in known:
            raise _unknown(f"{path}[{i}]", event_type, known)


def check_webhook_types(path: str, event_types: Sequence[str]) -> None:
    """Raises `validation_failed` naming `path[i]` for the first type a webhook would never
    be sent: one no Node emits, or a webhook's own (`webhook.*`). `*` means every type."""
    known = journal_event_types()
    for i, event_type in enumerate(event_types):
        if event_type == _EVERY_TYPE:
            continue
        if event_type.startswith(_WEBHOOK_OWN_PREFIX):
            raise _refused(f"{path}[{i}]", event_type, "is a webhook's own event: never delivered")
        if event_type not in known:
            deliverable = (t for t in known if not t.startswith(_WEBHOOK_OWN_PREFIX))
            raise _unknown(f"{path}[{i}]", event_type, deliverable)
