"""`turn.show`'s answer: a turn, its prompt and a page of its items, under the 1 MiB frame.

The page's budget counts what the reply carries as JSON (escapes included): the prompt, the
turn's `outputText` and each item's text, data and artifact path. It stops (`itemsTruncated`,
with `nextItemCursor` naming the last item listed) at `MAX_ITEMS` or at the budget; an item
too large to fit alone on a page is listed cut and marked `truncated` (always one item a page,
so following the cursor ends).

It lives with the Session actor because the actor builds an ended turn's first page inside
the transaction that ends it, when a `turn.send` waits for it (`SessionCore`), and publishes
it with the turn's snapshot: that answer then reads nothing. `maia.service` re-exports it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

import attrs
import orjson

from maia.core._limits import MAX_ITEM_TEXT_LENGTH
from maia.protocol import Turn, TurnItem, TurnShowOutput

from ._sql_turns import ITEMS_OF_TURN
from ._views import turn_view

MAX_ITEMS = 1024
# Of the 1 MiB frame: 64 KiB stay for the envelope and the turn's small fields (its failure
# message, at most 4,096 characters, escapes and all, is under 25 KiB).
RESPONSE_BUDGET_BYTES = 1024 * 1024 - 64 * 1024
# outputText as JSON: 256 KiB of text fits whole unless escapes swell it.
OUTPUT_BUDGET_BYTES = 384 * 1024
ITEM_OVERHEAD_BYTES = 256  # an item's field names, IDs, kind, state and sequence


def encoded_size(text: str | None) -> int:
    """Bytes `text` takes in the reply (orjson: UTF-8, control characters escaped)."""
    return 4 if text is None else len(orjson.dumps(text))


def _fit(text: str, budget: int) -> str:
    """The longest start of `text` whose JSON form fits `budget` bytes (at least 0 chars)."""
    low, high = 0, len(text)
    while low < high:  # binary search: escapes make the size per character uneven
        middle = (low + high + 1) // 2
        if encoded_size(text[:middle]) <= budget:
            low = middle
        else:
            high = middle - 1
    return text[:low]


def _bounded_turn(turn: Turn) -> Turn:
    """The turn with its outputText cut (marked outputTruncated) if its JSON would pass
    `OUTPUT_BUDGET_BYTES` (only text full of escapes does)."""
    if turn.output_text is None or encoded_size(turn.output_text) <= OUTPUT_BUDGET_BYTES:
        return turn
    return attrs.evolve(
        turn, output_text=_fit(turn.output_text, OUTPUT_BUDGET_BYTES), output_truncated=True
    )


def show_page(conn: sqlite3.Connection, turn_id: str, after_seq: int) -> TurnShowOutput:
    """The turn and its items after sequence `after_seq`, in order, under the frame bound.
    Raises `resource_not_found`."""
    turn = turn_view(conn, turn_id)
    prompt = conn.execute("SELECT text FROM turns WHERE turn_id = ?", (turn_id,)).fetchone()[0]
    return items_page(conn, turn, prompt, after_seq)


def items_page(conn: sqlite3.Connection, turn: Turn, prompt: str, after_seq: int,
               known: Sequence[tuple[int, str, str, str, str]] | None = None,
               ) -> TurnShowOutput:  # fmt: skip
    """`show_page` for a turn already known (its committed view and prompt): only its
    items are read, unless the caller knows them all (`known`: seq, item ID, kind, state
    and text of each, in order, as written with no data, artifact or cut)."""
    turn_id = turn.turn_id
    turn = _bounded_turn(turn)
    left = RESPONSE_BUDGET_BYTES - encoded_size(prompt) - encoded_size(turn.output_text)
    rows: list[Any]
    if known is not None:
        rows = [(item_id, kind, state, seq, text, None, 0, None)
                for seq, item_id, kind, state, text in known if seq > after_seq]  # fmt: skip
        rows = rows[: MAX_ITEMS + 1]
    else:
        rows = conn.execute(
            # The text is cut here, not by SQLite: its substr() and length() end at a NUL.
            "SELECT item_id, kind, state, seq, text, data, truncated, artifact FROM turn_items"
            f" WHERE {ITEMS_OF_TURN} AND seq > ? ORDER BY item_key LIMIT ?",
            (turn_id, turn_id, after_seq, MAX_ITEMS + 1),
        ).fetchall()
    rows = [(*r[:4], None if r[4] is None else r[4][:MAX_ITEM_TEXT_LENGTH], r[5],
             len(r[4] or "") > MAX_ITEM_TEXT_LENGTH or r[6], r[7]) for r in rows]  # fmt: skip
    items: list[TurnItem] = []
    more = len(rows) > MAX_ITEMS
    for r in rows[:MAX_ITEMS]:
        text, cut = r[4], bool(r[6])
        fixed = ITEM_OVERHEAD_BYTES + len(r[5] or "") + encoded_size(r[7])
        cost = fixed + encoded_size(text)
        if cost > left and items:
            more = True
            break
        if cost > left:  # a first item too large alone: its start, marked
            text, cut = _fit(text, max(left - fixed, 0)), True
        left -= cost
        data = orjson.loads(r[5]) if r[5] else None
        items.append(TurnItem(item_id=r[0], kind=r[1], state=r[2], sequence=r[3], text=text,
                              data=data, truncated=cut, artifact_path=r[7]))  # fmt: skip
    return TurnShowOutput(turn=turn, items=tuple(items), items_truncated=more, prompt=prompt)
