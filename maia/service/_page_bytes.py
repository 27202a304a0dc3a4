"""events.read's page under the 1 MiB frame: a page is sized by `limit` (up to 500 events),
and 500 events whose payloads carry item texts can pass 1 MiB of UTF-8. The page is cut
after the last event that fits `PAGE_BUDGET_BYTES` (`hasMore`, its cursor after that
event); the first event always travels, so following the cursor ends (one too large for a
frame alone is refused `frame_too_large` by the Node, typed)."""

from __future__ import annotations

from collections.abc import Sequence

import orjson

from storage import EventRecord

# Of the 1 MiB frame: 64 KiB stay for the envelope, the cursors and the page's own fields.
PAGE_BUDGET_BYTES = 1024 * 1024 - 64 * 1024
# An event's field names, numbers, classification and timestamp as JSON (its IDs are
# counted one by one).
EVENT_FIELDS_BYTES = 512


def _text_bytes(text: str | None) -> int:
    if text is None:
        return 0
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def event_bytes(record: EventRecord) -> int:
    """At least the bytes `record` takes as an Event in the answer."""
    ids = (
        record.event_id, record.event_type, record.owner_type, record.owner_id,
        record.project_id, record.session_id, record.actor_id, record.causation_id,
        record.correlation_id, record.attempt_id, record.activation_id, record.command_id,
    )  # fmt: skip
    return EVENT_FIELDS_BYTES + sum(map(_text_bytes, ids)) + len(orjson.dumps(record.payload))


def fitting(events: Sequence[EventRecord], budget: int = PAGE_BUDGET_BYTES) -> int:
    """How many of `events`, from the first, fit `budget` bytes (at least one)."""
    used = 0
    for index, record in enumerate(events):
        used += event_bytes(record)
        if used > budget:
            return max(index, 1)
    return len(events)
