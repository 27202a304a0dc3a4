"""What a Session holds of its worker between messages: the attempt the queue waits for
(`Attempt`) and the running turn's rows not yet written (`TurnBuffer`).

Both are plain state shared, by reference, between the actor's collaborators: the worker
driver sets the attempt, the turn's progress fills the buffer, and every transaction of the
running turn writes the buffer first (`TurnBuffer.flush_rows`), so what streamed before keeps
its place.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable

import attrs

from maia.core import new_id
from supervision.workers import WorkerHandle

from . import _queue as q
from ._items import OpenItem, flush_item
from ._lifecycles import TurnEvent
from ._sql_turns import LAST_ITEM_PLACE
from ._store import Draft, turn_step

log = logging.getLogger("maia.session")
GONE_REASONS = ("worker_failed", "runtime_lost")  # a gone worker's turn: its item says why
Live = Callable[[str, str, str, str, str, str], None]


@attrs.define
class Attempt:
    """The worker attempt whose exit the queue waits for, and the limits its turn runs under."""

    handle: WorkerHandle | None = None
    tools: bool = False  # an agent worker: it asks approvals as `maia.approval` tool calls
    wall_time_ms: int | None = None  # the executor's own per-turn limit (not echo)
    timed_out: str | None = None  # the turn interrupted for passing its wall time
    over_limit: tuple[str, str, str] | None = None  # (turn, reason, message) past a limit


class TurnBuffer:
    """The running turn's `started` and streamed message text, written at most a flush
    late; item sequence numbers for the turn's items."""

    def __init__(self, session_id: str, live: Live | None) -> None:
        self.session_id = session_id
        self.live_sink = live
        self.item: OpenItem | None = None
        self.started: str | None = None  # a running turn whose `started` is not yet written
        self.item_seq = 0
        self.flush_at: float | None = None

    def reset(self) -> None:
        """A turn is dispatched: nothing of an earlier one is buffered."""
        self.item, self.started, self.item_seq = None, None, 0

    def next_seq(self) -> int:
        self.item_seq += 1
        return self.item_seq

    def place_left(self, *, final: bool = False) -> bool:
        """Whether the turn has a place for one more item (its key's range ends at
        `LAST_ITEM_PLACE`): the last place is kept for the `final` item that says why the
        turn ended failed."""
        return self.item_seq < (LAST_ITEM_PLACE if final else LAST_ITEM_PLACE - 1)

    def started_unflushed(self, turn_id: str) -> bool:
        return self.started == turn_id

    def mark_started_flushed(self, turn_id: str) -> None:
        if self.started == turn_id:
            self.started = None

    def pending(self) -> bool:
        """Whether anything waits to be written."""
        return self.started is not None or (self.item is not None and not _clean(self.item))

    def open_item(self, turn_id: str) -> OpenItem:
        """The turn's streaming message item (started, and announced live, on first use)."""
        if self.item is None:
            self.item = OpenItem(new_id("item"), turn_id, self.next_seq(), "message")
            self.live("item.started", self.item, "")
        return self.item

    def live(self, record: str, item: OpenItem, text: str) -> None:
        """Publish a live item record (the observation hub; ephemeral, not stored)."""
        if self.live_sink is not None:
            self.live_sink(record, self.session_id, item.turn_id, item.item_id, item.kind, text)

    def flush_rows(self, conn: sqlite3.Connection, draft: Draft, *,
                   ending: str | None = None) -> None:  # fmt: skip
        """Write the buffered `started` and item text. Runs inside the write fn while the
        actor waits for it. The buffer's marks (started written, item stored) change only when
        the transaction commits (`Draft.on_commit`): a failed or replayed run leaves them.
        `ending`: the turn this transaction ends, whose start's row goes with its end's."""
        started = self.started
        if started is not None and started in draft.turns and "started" not in draft.buffered:
            turn_step(conn, draft, started, TurnEvent.STARTED, caller="worker",
                      defer=started == ending)  # fmt: skip
            draft.buffered["started"] = started
            draft.on_commit.append(lambda: self.mark_started_flushed(started))
        item = self.item
        if item is not None and item.turn_id in draft.turns and not _clean(item, draft):
            flush_item(conn, draft, item)
            if item.completed:
                draft.on_commit.append(lambda: self._drop_item(item))

    def _drop_item(self, item: OpenItem) -> None:
        if self.item is item:
            self.item = None

    def failure_items(self, actions: tuple[q.QueueAction, ...], reason: str,
                      stderr: str) -> list[OpenItem]:  # fmt: skip
        """An `error` item for each turn its gone worker failed (`worker_failed`, or
        `runtime_lost` when its runtime went with it), naming the cause and
        keeping the stderr tail (bounded); each also goes to node.log."""
        items = []
        text = f"the worker went: {reason}" + (
            f"\nstderr (last lines):\n{stderr}" if stderr else ""
        )
        for action in actions:
            if (
                isinstance(action, q.FailTurn)
                and action.reason in GONE_REASONS
                and self.place_left(final=True)
            ):
                log.warning("session %s: turn %s failed %s: %s", self.session_id,
                            action.turn_id, action.reason, text)  # fmt: skip
                items.append(
                    OpenItem(new_id("item"), action.turn_id, self.next_seq(), "error", text, True)
                )
        return items


def _clean(item: OpenItem, draft: Draft | None = None) -> bool:
    """Nothing of `item` left to write (`draft`: counting what that transaction wrote)."""
    if draft is not None and item.item_id in draft.buffered:
        return bool(draft.buffered[item.item_id] == len(item.text))
    return item.stored and item.stored_text_len == len(item.text) and not item.completed
