"""A running turn's items as the Session actor writes them: `OpenItem` (a message or error
item being streamed or written whole) and `flush_item` (its row inserted once, then updated;
completing it emits `item.completed`). The items it writes are kept on the turn's memo
(`TurnMemo.items`), so the commit that completes the turn builds its view and first item page
from them (`_store.turn_step`); an item written another way marks them unknown
(`items_unknown`), and the views are read back.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import attrs

from . import _sql_turns as turns_sql
from ._store import Draft, emit


@attrs.define
class OpenItem:
    """A message item being streamed; `flushed_seq` is 0 until its row exists."""

    item_id: str
    turn_id: str
    seq: int
    kind: str
    text: str = ""
    completed: bool = False
    stored: bool = False
    stored_text_len: int = 0
    spill: Any = None  # a `_spill.Spill`: the text past the item bound, on disk


def items_unknown(draft: Draft, turn_id: str) -> None:
    """An item or usage of `turn_id` was written another way than `flush_item`: its views
    are read back from now on."""
    memo = draft.memo(turn_id)
    if memo is not None:
        memo.items = None
    draft.views.pop(turn_id, None)


def _mark_stored(item: OpenItem, length: int) -> None:
    item.stored, item.stored_text_len = True, length


EVENT_TEXT_CHARS = 16_384  # of an item's text in its item.completed event


def flush_item(conn: sqlite3.Connection, draft: Draft, item: OpenItem) -> None:
    """Persist an item's text so far (insert once, then update); completing emits an event."""
    state = "completed" if item.completed else "started"
    draft.views.pop(item.turn_id, None)
    if not item.stored and item.item_id not in draft.buffered:
        turns_sql.insert_item(conn, item.item_id, item.turn_id, item.seq, item.kind,
                              item.text, state, draft.now)  # fmt: skip
    else:
        turns_sql.update_item(conn, item.item_id, item.turn_id, item.seq, item.text, state,
                              draft.now)  # fmt: skip
    # The item's marks change only once the transaction commits (a replay runs it again).
    length = draft.buffered[item.item_id] = len(item.text)
    draft.on_commit.append(lambda: _mark_stored(item, length))
    memo = draft.memo(item.turn_id)
    if item.completed and item.spill is not None:  # the rest of its text, in an artifact
        turns_sql.truncate_item(conn, item.item_id, item.turn_id, item.seq,
                                item.spill.finish())  # fmt: skip
        items_unknown(draft, item.turn_id)
    elif memo is not None and memo.items is not None:
        known = (item.seq, item.item_id, item.kind, state, item.text)
        memo.items = [i for i in memo.items if i[1] != item.item_id]
        memo.items.append(known)
        memo.items.sort()
    if item.completed:
        # The text lives in turn_items; the event carries at most its start (stored once).
        emit(conn, draft, "item.completed",
             {"turnId": item.turn_id, "itemId": item.item_id, "kind": item.kind,
              "text": item.text[:EVENT_TEXT_CHARS]})  # fmt: skip
