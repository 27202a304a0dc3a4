"""The observation stream (`observe.events`): snapshot or replay, then live batches.

Order of work, which is what makes resume exact: subscribe to the hub first (its buffer
collects every entry from then on), then read the journal (a tail snapshot, or a replay from
the cursor's position), then drain the buffer, dropping durable entries the journal read
already covered. Every frame carries a fresh signed cursor naming the journal position
through which the client has everything its query matches; a frame is all or nothing, so a
client that resumes with the cursor of the last frame it read sees each record once.

Between the start and the live part the Node sends one `summary` frame: how the stream
started (snapshot, replay, or reset then snapshot), how many records that start carried and
of which event types, the journal's retained range, and the cursor at the live edge.

A cursor that cannot be served any more (expired, from an earlier run of the Node, behind
the pruned horizon) gets a `reset` frame with a fresh snapshot descriptor, then the snapshot
and live batches follow on the same connection. A cursor that does not verify ends the
stream with `invalid_cursor`. A subscriber whose buffer overflowed gets a `gap` frame
(counts, and the cursor to resume from) and the connection closes.
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Awaitable, Callable
from typing import Any, Final

from maia.core import MaiaError, format_timestamp_ms
from storage import oldest_retained_position

from ._event_types import check_observed_types
from ._frames import frame, pack, records_frame
from ._hub import ObservationHub, ObservationSubscriber
from ._journal import replay_page, tail_snapshot
from ._query import ObservationQuery, ObserveInput
from ._shape import Entry, watermark


def _bounds(conn: sqlite3.Connection) -> tuple[int, int]:
    """The journal's oldest retained position and its head."""
    head = conn.execute("SELECT coalesce(max(position), 0) FROM events").fetchone()[0]
    return oldest_retained_position(conn), int(head)


OBSERVATIONS_SCOPE: Final = "observations"
SUMMARY_TYPES_MAX: Final = 64  # event types named in a summary; the rest count as "other"
Send = Callable[[str], Awaitable[None]]


class ObservationStream:
    """One subscription's life on one connection."""

    def __init__(self, hub: ObservationHub, request_id: Any, params: ObserveInput,
                 send: Send, *, heartbeat_s: float, peer: str = "") -> None:  # fmt: skip
        self.hub = hub
        self.peer = peer  # the connection's remote address, for the hub's statistics
        self.request_id = request_id
        self.query: ObservationQuery = params.query
        self.cursor = params.cursor
        self.digest = self.query.digest()
        self.send = send
        self.heartbeat_s = heartbeat_s
        self.covered = 0  # journal position through which the client has every match
        self.sent_records = 0
        self.mode = "snapshot"
        self.start_types: dict[str, int] = {}  # event types the start carried, for the summary

    def _cursor(self) -> str:
        return self.hub.store.cursors.issue(
            position=self.covered, filter_digest=self.digest, scope=OBSERVATIONS_SCOPE
        )

    def _encode(self, entry: Entry) -> bytes:
        return entry.observation(
            node_id=self.hub.node_id,
            epoch=self.hub.epoch,
            include_content=self.query.include_content,
        )

    async def run(self) -> None:
        """Serve until the client leaves, overflow (gap) or a terminal error (raised:
        validation_failed for a type no observation carries, invalid_cursor, …)."""
        if self.query.event_types and self.hub.journal_types is not None:
            check_observed_types("query.eventTypes", self.query.event_types,
                                 self.hub.journal_types())  # fmt: skip
        subscriber = self.hub.subscribe_observations(self.query, peer=self.peer)
        try:
            await self._start(subscriber)
            await self._summary()
            await self._live(subscriber)
        finally:
            self.hub.unsubscribe(subscriber)

    async def _start(self, subscriber: ObservationSubscriber) -> None:
        store = self.hub.store
        if self.cursor is not None:
            try:
                position = store.cursors.open(
                    self.cursor, filter_digest=self.digest, scope=OBSERVATIONS_SCOPE
                )
                self.mode = "replay"
                await self._replay(position)
                return
            except MaiaError as error:
                if error.code != "cursor_reset_required":
                    raise
                self.mode = "reset"
                await self._snapshot(reset=error)
                return
        await self._snapshot(reset=None)

    async def _replay(self, position: int) -> None:
        self.covered = position
        query = self.query
        while True:
            after = self.covered
            page = await self.hub.store.read(
                functools.partial(replay_page, query=query, after=after)
            )
            entries = [Entry(event) for event in page.events]
            self._count(entries)
            while entries:
                encoded, count = pack(entries, self._encode)
                sent, entries = entries[:count], entries[count:]
                last = sent[-1].event
                assert last is not None
                self.covered = page.covered if not entries else last.position
                await self._batch(encoded, 0)
            self.covered = page.covered
            if not page.full:
                return

    async def _snapshot(self, *, reset: MaiaError | None) -> None:
        snap = await self.hub.store.read(lambda conn: tail_snapshot(conn, self.query))
        self.covered = snap.head
        generated = format_timestamp_ms(self.hub.clock.wall_ms())
        descriptor = {
            "resolvedFilterDigest": self.digest,
            "watermark": watermark(snap.head),
            "generatedAt": generated,
            "truncated": snap.truncated,
        }
        if reset is not None:
            await self.send(
                frame(
                    self.request_id,
                    {"type": "reset", "error": reset.to_wire(), "snapshot": descriptor},
                )
            )
        entries = [Entry(event) for event in snap.events]
        self._count(entries)
        while True:
            encoded, count = pack(entries, self._encode)
            del entries[:count]
            final = not entries
            tail: dict[str, Any] = {**descriptor, "final": final}
            if final:
                tail["cursor"] = self._cursor()
            await self.send(
                records_frame(self.request_id, {"type": "snapshot"}, "records", encoded, tail)
            )
            self.sent_records += len(encoded)
            if final:
                return

    def _count(self, entries: list[Entry]) -> None:
        types = self.start_types
        for entry in entries:
            assert entry.event is not None
            kind = entry.event.event_type
            if kind not in types and len(types) >= SUMMARY_TYPES_MAX:
                kind = "other"
            types[kind] = types.get(kind, 0) + 1

    async def _summary(self) -> None:
        """The one `summary` frame: what the start carried, and where live records begin."""
        horizon, head = await self.hub.store.read(_bounds)
        body = {
            "type": "summary",
            "mode": self.mode,
            "recordCount": sum(self.start_types.values()),
            "eventTypeCounts": dict(sorted(self.start_types.items())),
            "oldestRetainedPosition": horizon,
            "headPosition": head,
            "resolvedFilterDigest": self.digest,
            "watermark": watermark(self.covered),
            "cursor": self._cursor(),
        }
        await self.send(frame(self.request_id, body))

    async def _batch(self, encoded: list[bytes], coalesced: int, dropped: int = 0) -> None:
        tail = {
            "resolvedFilterDigest": self.digest,
            "watermark": watermark(self.covered),
            "coalescedRecordCount": coalesced,
            "droppedRecordCount": dropped,
            "heartbeat": False,
            "cursor": self._cursor(),
        }
        await self.send(records_frame(self.request_id, {"type": "event"}, "records", encoded, tail))
        self.sent_records += len(encoded)

    async def _live(self, subscriber: ObservationSubscriber) -> None:
        reported_coalesced = 0
        while True:
            if subscriber.overflowed and not len(subscriber):
                await self._gap(subscriber)
                return
            entries = [
                e for e in subscriber.take(64)
                if e.event is None or e.event.position > self.covered
            ]  # fmt: skip
            if not entries:
                if not len(subscriber) and not subscriber.overflowed:
                    # Everything delivered so far that matched was sent: the cursor may
                    # move to the hub's position.
                    self.covered = max(self.covered, self.hub.delivered_position)
                    await subscriber.wait(self.heartbeat_s)
                    if not len(subscriber) and not subscriber.overflowed:
                        await self._heartbeat()
                continue
            encoded, count = pack(entries, self._encode)
            subscriber.put_back(entries[count:])
            for entry in entries[:count]:
                if entry.event is not None:
                    self.covered = max(self.covered, entry.event.position)
            coalesced = subscriber.coalesced - reported_coalesced
            reported_coalesced = subscriber.coalesced
            # what workers dropped before the diagnostics in it (each record says its own)
            dropped = sum(e.diagnostic.dropped_before for e in entries[:count] if e.diagnostic)
            await self._batch(encoded, coalesced, dropped)

    async def _heartbeat(self) -> None:
        self.covered = max(self.covered, self.hub.delivered_position)
        body = {
            "type": "heartbeat",
            "records": [],
            "resolvedFilterDigest": self.digest,
            "watermark": watermark(self.covered),
            "coalescedRecordCount": 0,
            "droppedRecordCount": 0,
            "heartbeat": True,
            "cursor": self._cursor(),
        }
        await self.send(frame(self.request_id, body))

    async def _gap(self, subscriber: ObservationSubscriber) -> None:
        body = {
            "type": "gap",
            "reason": "slow consumer: the subscriber's buffer overflowed; resume with cursor",
            "coalescedRecordCount": subscriber.coalesced,
            "droppedRecordCount": subscriber.dropped,
            "watermark": watermark(self.covered, degraded=True),
            "cursor": self._cursor(),
        }
        await self.send(frame(self.request_id, body))
