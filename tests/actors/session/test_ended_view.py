"""A completed turn's view and first item page built from the actor's own writes (its send's
view, its start, the items it wrote) equal `turn_view` and `show_page` read back from the
real rows: short, multi-item, over the character and the byte bounds of outputText, no
message at all; a turn with an item written another way (a tool's) is read back instead."""

from __future__ import annotations

import functools
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from actors._write import Tx
from actors.session import show_page, turn_view
from actors.session._items import OpenItem, flush_item, items_unknown
from actors.session._items_page import items_page
from actors.session._lifecycles import WORKER, SessionState, TurnEvent
from actors.session._sql_turns import insert_item
from actors.session._store import Draft, insert_turn, turn_step
from actors.session._views import OUTPUT_TEXT_CHARS, new_turn_view
from maia.protocol import SystemClock
from storage import open_storage

from ._rows import seed_running_session

NOW = 1_700_000_000_000
SHAPES: dict[str, list[tuple[str, str]]] = {
    "short": [("message", "hello")],
    "two messages and an error": [("message", "one "), ("error", "oops"), ("message", "two")],
    "over the characters": [("message", "x" * (OUTPUT_TEXT_CHARS + 10))],
    "over the bytes": [("message", "\U0001f600" * 70_000)],
    "no message": [],
}


def _life(conn: sqlite3.Connection, turn_id: str, items: list[tuple[str, str]],
          tool: bool) -> tuple[Any, Any, Any, Any]:  # fmt: skip
    """Send, dispatch and start a turn in one write, its items and end in the next (as a
    flush and the end commit do); the views the second built and those read back."""
    first = Tx(conn, "session", "session_t", NOW, 0, 1)
    draft = Draft("session_t", "project_t", SessionState.RUNNING, 1, "working", {}, NOW)
    draft.bind(first).next_seq = 1
    insert_turn(conn, draft, turn_id, "the prompt")
    draft.turns[turn_id].view = new_turn_view(turn_id, "session_t", "queued", 1, NOW, "the prompt")
    turn_step(conn, draft, turn_id, TurnEvent.DISPATCH)
    turn_step(conn, draft, turn_id, TurnEvent.STARTED, caller=WORKER)
    draft = draft.copy(NOW + 1234).bind(Tx(conn, "session", "session_t", NOW + 1234, 0, 1))
    for seq, (kind, text) in enumerate(items, 1):
        flush_item(conn, draft, OpenItem(f"item_{seq}", turn_id, seq, kind, text, True))
    if tool:
        # written as a tool's item is (keyed by its turn and place: turn_items' key trigger)
        insert_item(conn, "item_t", turn_id, 99, "tool_call", "", "completed", 0,
                    data='{"name": "x"}')  # fmt: skip
        items_unknown(draft, turn_id)
    turn_step(conn, draft, turn_id, TurnEvent.COMPLETED, caller=WORKER)
    built = draft.views.get(turn_id)
    known = draft.ended_items.get(turn_id)
    page = None if built is None else items_page(conn, built, "the prompt", 0, known)
    return built, page, turn_view(conn, turn_id), show_page(conn, turn_id, 0)


@pytest.mark.parametrize("shape", sorted(SHAPES))
async def test_a_completed_turn_built_from_its_writes_is_the_row_read_back(
    tmp_path: Path, shape: str
) -> None:
    """Its view and first page (no read) equal turn_view and show_page (read)."""
    async with open_storage(tmp_path / "maia.db", clock=SystemClock()) as store:
        await store.write(seed_running_session)
        built, page, read, shown = await store.write(
            functools.partial(_life, turn_id="turn_v", items=SHAPES[shape], tool=False)
        )
    assert built is not None
    assert built.state == "completed"
    assert built == read
    assert page == shown


async def test_a_turn_with_an_item_written_another_way_is_read_back(tmp_path: Path) -> None:
    """A tool's item (data, kinds the actor does not keep): no view built from memory."""
    async with open_storage(tmp_path / "maia.db", clock=SystemClock()) as store:
        await store.write(seed_running_session)
        built, page, read, _ = await store.write(
            functools.partial(_life, turn_id="turn_t", items=[("message", "hi")], tool=True)
        )
    assert built is None
    assert page is None
    assert read.output_text == "hi"
