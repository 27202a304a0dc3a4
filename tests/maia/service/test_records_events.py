"""events.read's three statuses on real storage: a page (with oldestRetainedCursor once a
prune left a hole), cursor_reset_required with a fresh snapshot descriptor, invalid_cursor;
each result validates against the op's generated output schema and decodes strictly."""

from __future__ import annotations

import sqlite3
from typing import Any

import jsonschema
import pytest

from maia.protocol import (
    REGISTRY,
    EventsReadOutput,
    MaiaError,
    check,
    encode_output,
    schema_document,
)
from maia.service import ServiceContext
from maia.service._records import events_read
from storage import append_event, prune_events

from ._helpers import params


def _append(owner: str, count: int) -> Any:
    def write(conn: sqlite3.Connection) -> list[int]:
        return [
            append_event(conn, owner_id=owner, event_type="turn.completed", payload={"n": n},
                         now_ms=1).position
            for n in range(count)
        ]  # fmt: skip

    return write


def _valid(out: EventsReadOutput) -> dict[str, Any]:
    """The result as the wire carries it, checked by the JSON Schema and by the decoder."""
    op = REGISTRY.get("events.read")
    assert op is not None
    wire = encode_output(op, out)
    validator = jsonschema.Draft202012Validator(schema_document("events.read", "output"))
    validator.validate({"ok": True, "result": wire})
    assert check(EventsReadOutput, wire, root="result") == out
    return wire


async def _read(ctx: ServiceContext, position: dict[str, Any], **more: Any) -> EventsReadOutput:
    return await events_read(ctx, params("events.read", {"position": position, **more}))


async def test_a_page_has_no_hole_marker_until_a_prune(ctx: ServiceContext) -> None:
    """Before any prune a page carries no oldestRetainedCursor; after one it does, and that
    cursor reads from the oldest retained event."""
    positions = await ctx.store.write(_append("owner_a", 6))
    first = await _read(ctx, {"kind": "start"}, limit=3)
    assert first.status == "page"
    assert first.oldest_retained_cursor is None
    assert "oldestRetainedCursor" not in _valid(first)
    assert [e.journal_position for e in first.events][:1] == [1]
    await ctx.store.write(lambda c: prune_events(c, before_position=positions[3]))
    later = await _read(ctx, {"kind": "start"}, limit=2)
    assert later.status == "page"
    assert later.events[0].journal_position == positions[3]
    assert later.oldest_retained_cursor is not None
    _valid(later)
    again = await _read(ctx, {"kind": "cursor", "cursor": later.oldest_retained_cursor})
    assert [e.journal_position for e in again.events] == positions[3:]


async def test_a_cursor_behind_a_prune_answers_reset_with_a_snapshot(ctx: ServiceContext) -> None:
    """A cursor issued before the prune is answered cursor_reset_required (no events) with a
    descriptor whose cursor continues from the oldest retained event."""
    positions = await ctx.store.write(_append("owner_b", 5))
    page = await _read(ctx, {"kind": "start"}, limit=1)
    assert page.next_cursor is not None
    await ctx.store.write(lambda c: prune_events(c, before_position=positions[3]))
    reset = await _read(ctx, {"kind": "cursor", "cursor": page.next_cursor})
    assert reset.status == "cursor_reset_required"
    assert reset.events == ()
    assert reset.reason
    assert reset.snapshot is not None
    assert reset.snapshot.oldest_retained_position == positions[3]
    assert reset.snapshot.head_position == positions[-1]
    _valid(reset)
    resumed = await _read(ctx, {"kind": "cursor", "cursor": reset.snapshot.cursor})
    assert resumed.status == "page"
    assert [e.journal_position for e in resumed.events] == positions[3:]
    pruned_owner = await _read(
        ctx, {"kind": "sequence", "ownerType": "test", "ownerId": "owner_b", "afterSequence": 1}
    )
    assert pruned_owner.status == "cursor_reset_required"
    assert pruned_owner.snapshot is not None
    owned = await _read(ctx, {"kind": "cursor", "cursor": pruned_owner.snapshot.cursor})
    assert [e.owner_sequence for e in owned.events] == [4, 5]


async def test_a_cursor_not_issued_for_this_read_answers_invalid_cursor(
    ctx: ServiceContext,
) -> None:
    """A forged cursor and one issued for another filter are invalid_cursor results: a
    reason, no events, no snapshot."""
    await ctx.store.write(_append("owner_c", 2))
    page = await _read(ctx, {"kind": "start"}, eventTypes=["turn.completed"])
    assert page.next_cursor is not None
    forged = page.next_cursor[:-4] + ("AAAA" if not page.next_cursor.endswith("AAAA") else "BBBB")
    for cursor, types in ((forged, ["turn.completed"]), (page.next_cursor, ["turn.failed"])):
        out = await _read(ctx, {"kind": "cursor", "cursor": cursor}, eventTypes=types)
        assert out.status == "invalid_cursor"
        assert out.reason
        assert out.snapshot is None
        assert out.events == ()
        wire = _valid(out)
        assert set(wire) == {"status", "events", "reason"}


def test_a_result_whose_fields_disagree_with_its_status_is_refused() -> None:
    """A page without its cursor, or an invalid_cursor carrying a snapshot, fails the check."""
    for wire in (
        {"status": "page", "events": [], "hasMore": False},
        {"status": "invalid_cursor", "reason": "x", "nextCursor": "c1.a.b"},
        {"status": "cursor_reset_required", "reason": "x"},
    ):
        with pytest.raises(MaiaError) as refused:
            check(EventsReadOutput, wire, root="result")
        assert refused.value.code == "validation_failed"


async def test_a_sequence_read_under_another_owner_type_is_refused(ctx: ServiceContext) -> None:
    """`{"kind": "sequence"}` names an owner by type and ID: the right type reads its events;
    another type names no such owner and is refused naming `position.ownerType` (it read the
    session's events as if they were the other type's)."""
    await ctx.store.write(_append("session_seq", 3))
    position = {"kind": "sequence", "ownerId": "session_seq", "afterSequence": 0}
    page = await _read(ctx, {**position, "ownerType": "session"})
    assert [e.owner_sequence for e in page.events] == [1, 2, 3]
    with pytest.raises(MaiaError) as refused:
        await _read(ctx, {**position, "ownerType": "project"})
    assert refused.value.code == "validation_failed"
    assert refused.value.details["path"] == "position.ownerType"
