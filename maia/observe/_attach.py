"""The session.attach stream: one Session's turns and items, replayed or snapshotted, then
synchronized with each open item's text so far, then live.

Assembly, in the order that makes it exact:
1. subscribe to the hub (from here on every committed event of the Session and every live
   item record lands in the buffer);
2. read the journal: with a cursor, every event after its owner sequence (`replay`); without
   one, from the `turn.started` of the running turn, if any (`snapshot`);
3. once the hub has delivered everything the read saw, drain the buffer in one synchronous
   step: durable records not yet sent are sent, live ones are dropped because the hub's open
   items, read in that same step, already contain their text; then `synchronized`;
4. live: durable records (by owner sequence, never twice) and live item records (carrying the
   owner sequence they follow) in frames of at most 64, heartbeats when idle.
A buffer that overflows ends the stream with `resync` (attach again with the last cursor:
durable records replay exactly, and `synchronized` restores the open items' text).
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Awaitable, Callable
from typing import Any, Final

import orjson

from maia.protocol import MaiaError, SessionAttachInput
from storage import OWNER_NO, read_owner_events

from ._buffer import Subscriber
from ._frames import frame, pack, records_frame
from ._hub import ObservationHub
from ._shape import Entry, live_stream_record, stream_record

REPLAY_PAGE: Final = 500
SYNC_ATTEMPTS: Final = 3
DELIVERY_WAIT_S: Final = 5.0
Send = Callable[[str], Awaitable[None]]


class _Resync(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _start_point(conn: sqlite3.Connection, session_id: str) -> tuple[int, int]:
    """(head owner sequence, snapshot start): the snapshot starts before the running turn's
    `turn.started`, or at the head when no turn runs. Raises `resource_not_found`."""
    if (
        conn.execute("SELECT 1 FROM sessions WHERE session_id = ?", (session_id,)).fetchone()
        is None
    ):
        raise MaiaError(
            "resource_not_found",
            f"session {session_id} does not exist",
            {"resource": "session", "id": session_id},
        )
    head = conn.execute(
        f"SELECT coalesce((SELECT max(owner_seq) FROM events WHERE owner_no = {OWNER_NO}),"
        " (SELECT last_seq FROM pruned_owner_heads WHERE owner_id = ?), 0)",
        (session_id, session_id),
    ).fetchone()[0]
    row = conn.execute(
        f"SELECT min(e.owner_seq) FROM turns t JOIN events e ON e.owner_no = {OWNER_NO}"
        " AND e.event_type = 'turn.started' AND json_extract(e.payload, '$.turnId') = t.turn_id"
        " WHERE t.session_id = ? AND t.state = 'running'",
        (session_id, session_id),
    ).fetchone()
    start = row[0] - 1 if row is not None and row[0] is not None else head
    return int(head), int(start)


class AttachStream:
    """One session.attach subscription on one connection."""

    def __init__(self, hub: ObservationHub, request_id: Any, params: SessionAttachInput,
                 send: Send, *, heartbeat_s: float, peer: str = "") -> None:  # fmt: skip
        self.hub = hub
        self.peer = peer  # the connection's remote address, for the hub's statistics
        self.request_id = request_id
        self.session_id = params.session_id
        self.cursor = params.cursor
        self.send = send
        self.heartbeat_s = heartbeat_s
        self.epoch = hub.epoch
        self.sequence = 0  # the owner sequence through which the client has every record
        self.position = 0  # the journal position of that event

    def _position(self) -> dict[str, int]:
        return {"epoch": self.epoch, "sequence": self.sequence}

    async def run(self) -> None:
        """Serve until the client leaves or a terminal frame; raises `MaiaError` for the
        terminal error (resource_not_found, invalid_cursor)."""
        subscriber = self.hub.subscribe_session(self.session_id, peer=self.peer)
        try:
            try:
                subscriber = await self._attach(subscriber)
                await self._live(subscriber)
            except _Resync as resync:
                await self.send(frame(self.request_id, {"type": "resync", "reason": resync.reason}))
        finally:
            self.hub.unsubscribe(subscriber)

    async def _attach(self, subscriber: Subscriber) -> Subscriber:
        head, start = await self.hub.store.read(lambda c: _start_point(c, self.session_id))
        mode = "snapshot"
        if self.cursor is not None:
            if self.cursor.epoch > self.epoch or self.cursor.sequence > head:
                raise MaiaError(
                    "invalid_cursor",
                    f"the cursor {{epoch {self.cursor.epoch}, sequence {self.cursor.sequence}}}"
                    f" is not a position of session {self.session_id} on this Node",
                    {
                        "path": "cursor",
                        "sessionId": self.session_id,
                        "epoch": self.epoch,
                        "head": head,
                    },
                )
            mode, start = "replay", self.cursor.sequence
        self.sequence = start
        await self.send(
            frame(self.request_id, {"type": "attached", "sessionId": self.session_id,
                                    "mode": mode, "position": self._position()})
        )  # fmt: skip
        for _ in range(SYNC_ATTEMPTS):
            await self._replay()
            if not await self.hub.wait_delivered(self.position, DELIVERY_WAIT_S):
                raise _Resync("the Node is too busy to synchronize; attach again")
            if await self._synchronize(subscriber):
                return subscriber
            # The buffer overflowed while the journal was read: start it again from here.
            self.hub.unsubscribe(subscriber)
            subscriber = self.hub.subscribe_session(self.session_id, peer=self.peer)
        raise _Resync("could not synchronize with a Session this busy; attach again")

    async def _replay(self) -> None:
        while True:
            read = functools.partial(read_owner_events, owner_id=self.session_id,
                                     after_sequence=self.sequence, limit=REPLAY_PAGE)  # fmt: skip

            try:
                events = await self.hub.store.read(read)
            except MaiaError as error:
                if error.code == "cursor_reset_required":
                    raise _Resync(f"{error.message}; attach again without a cursor") from None
                raise
            records = []
            for event in events:
                record = stream_record(event, self.epoch)
                if record is not None:
                    records.append(record)
            if events:
                self.sequence = events[-1].owner_sequence
                self.position = events[-1].position
            await self._records(records)
            if len(events) < REPLAY_PAGE:
                return

    async def _synchronize(self, subscriber: Subscriber) -> bool:
        """Drain the buffer and read the open items in one step; False after an overflow."""
        if subscriber.overflowed:
            return False
        records: list[dict[str, Any]] = []
        for entry in subscriber.take(len(subscriber)):
            event = entry.event
            if event is None or event.owner_sequence <= self.sequence:
                continue  # live: part of the open items' text; durable: already sent
            if event.owner_sequence != self.sequence + 1:
                return False
            self.sequence, self.position = event.owner_sequence, event.position
            record = stream_record(event, self.epoch)
            if record is not None:
                records.append(record)
        open_items = self.hub.open_items(self.session_id)
        await self._records(records)
        await self.send(
            frame(self.request_id, {"type": "synchronized", "position": self._position(),
                                    "openItems": open_items})
        )  # fmt: skip
        return True

    async def _records(self, records: list[dict[str, Any]]) -> None:
        while records:
            encoded, count = pack(records, orjson.dumps)
            del records[:count]
            await self.send(records_frame(self.request_id, {"type": "records"}, "records",
                                          encoded, {}))  # fmt: skip

    def _record(self, entry: Entry) -> dict[str, Any] | None:
        event = entry.event
        if event is None:
            assert entry.live is not None
            return live_stream_record(entry.live, self.sequence, self.epoch)
        if event.owner_sequence <= self.sequence:
            return None
        if event.owner_sequence != self.sequence + 1:
            raise _Resync("the stream lost its place; attach again with your cursor")
        self.sequence, self.position = event.owner_sequence, event.position
        return stream_record(event, self.epoch)

    async def _live(self, subscriber: Subscriber) -> None:
        while True:
            if subscriber.overflowed:
                raise _Resync(
                    f"slow consumer: {subscriber.dropped} records were dropped; attach again"
                    " with your cursor"
                )
            records = []
            for entry in subscriber.take(64):
                record = self._record(entry)
                if record is not None:
                    records.append(record)
            if records:
                await self._records(records)
                continue
            if not len(subscriber):
                await subscriber.wait(self.heartbeat_s)
                if not len(subscriber) and not subscriber.overflowed:
                    await self.send(
                        frame(self.request_id, {"type": "heartbeat", "position": self._position()})
                    )
