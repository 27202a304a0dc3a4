"""The observation hub: fed by storage after each commit and by live item records, it fans
both out to subscribers' bounded buffers and keeps each Session's open items.

Committed events arrive through `Storage.add_commit_listener` (in the trio thread, in journal
order, before the writers are answered), so the hub never polls. Live item records
(`item.started`, `item.delta`) come from the Session actor through `publish_live`; a turn's
live records wait (deltas concatenated) until its durable `turn.started` passed through the
hub, so a stream always shows `turn.started` before the turn's live records. The hub keeps
each open item's text so far (bounded by the item text limit) for `synchronized` frames.

Every method here is synchronous except `wait_delivered`: a fan-out is a loop over the
matching subscribers' `push`, which never blocks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

import attrs
import trio

from maia.core import Clock
from storage import EventRecord, Storage
from supervision.workers import DiagnosticBatch

from ._buffer import DEFAULT_CAPACITY, Subscriber
from ._query import Matcher, ObservationQuery
from ._shape import DIAGNOSTIC_EVENT, TERMINAL_TURN_EVENTS, DiagnosticItem, Entry, LiveItem

MAX_OPEN_TEXT: Final = 262_144  # the protocol's item text limit
MAX_PENDING_TURNS: Final = 4096


@attrs.define
class _OpenItem:
    turn_id: str
    kind: str
    chunks: list[str] = attrs.field(factory=list)
    length: int = 0
    number: int = 0


class ObservationSubscriber(Subscriber):
    """A subscriber of the observation stream: its query's matcher and content grant."""

    def __init__(self, query: ObservationQuery, capacity: int, *, peer: str = "") -> None:
        super().__init__(capacity, peer=peer)
        self.query = query
        self.matcher = Matcher(query)


@attrs.frozen
class Dispatch:
    """A Session's dispatched turn as its `turn.dispatching` event said: what its worker's
    diagnostics are caused by and correlated with."""

    turn_id: str
    event_id: str
    correlation_id: str
    activation_id: str | None
    project_id: str | None


@attrs.frozen
class HubStatistics:
    subscribers: int
    session_subscribers: int
    delivered_position: int
    overflowed: int  # subscribers ended by overflow since the hub started
    overflowing: int  # subscribers overflowed now, whose stream is about to end
    live_published: int
    # Who those are: each overflowed subscriber's peer (its connection's remote address),
    # so a caller can tell one slow reader from another.
    overflowing_peers: tuple[str, ...] = ()


class ObservationHub:
    """Fan-out of committed events and live item records. Build with `open_hub`."""

    def __init__(
        self,
        store: Storage,
        clock: Clock,
        *,
        buffer_capacity: int = DEFAULT_CAPACITY,
        journal_types: Callable[[], frozenset[str]] | None = None,
    ) -> None:
        self.store = store
        # Every event type the journal holds, asked for when a query names types: a type
        # neither there nor live is refused. None: queries' types are not checked.
        self.journal_types = journal_types
        self.clock = clock
        self.node_id = store.node_id
        self.epoch = store.node_epoch
        self.buffer_capacity = buffer_capacity
        # How the socket serves this hub's subscribers (see `_socket`); tests may tune them.
        self.heartbeat_s = 5.0
        self.send_timeout_s = 30.0
        self.delivered_position = 0
        self._observers: set[ObservationSubscriber] = set()
        self._sessions: dict[str, set[Subscriber]] = {}
        self._open: dict[str, dict[str, _OpenItem]] = {}
        self._running: dict[str, str] = {}  # Session -> turn whose turn.started was delivered
        self._projects: dict[str, str | None] = {}
        self._pending: dict[tuple[str, str], list[LiveItem]] = {}
        self._dispatches: dict[str, Dispatch] = {}  # Session -> its last dispatched turn
        self._diagnostic_numbers: dict[str, int] = {}  # attempt -> records published
        self._advanced = trio.Event()
        self._overflowed = 0
        self._live_published = 0
        self.diagnostics_published = 0
        # The workers' sink (a `DiagnosticsRecorder`), set by `open_hub`.
        self.diagnostics: Any = None

    # -- subscriptions --------------------------------------------------------------------

    def subscribe_observations(
        self, query: ObservationQuery, *, peer: str = ""
    ) -> ObservationSubscriber:
        subscriber = ObservationSubscriber(query, self.buffer_capacity, peer=peer)
        self._observers.add(subscriber)
        return subscriber

    def subscribe_session(self, session_id: str, *, peer: str = "") -> Subscriber:
        subscriber = Subscriber(self.buffer_capacity, peer=peer)
        self._sessions.setdefault(session_id, set()).add(subscriber)
        return subscriber

    def unsubscribe(self, subscriber: Subscriber) -> None:
        if subscriber.overflowed:
            self._overflowed += 1
        if isinstance(subscriber, ObservationSubscriber):
            self._observers.discard(subscriber)
            return
        for session_id, subscribers in list(self._sessions.items()):
            if subscriber in subscribers:
                subscribers.discard(subscriber)
                if not subscribers:
                    del self._sessions[session_id]

    def open_items(self, session_id: str) -> list[dict[str, Any]]:
        """Each open item of the Session with its text so far (OpenItem wire objects)."""
        items = self._open.get(session_id, {})
        return [
            {"turnId": item.turn_id, "itemId": item_id, "kind": item.kind,
             "text": "".join(item.chunks)}
            for item_id, item in items.items()
        ]  # fmt: skip

    async def wait_delivered(self, position: int, timeout_s: float) -> bool:
        """Wait until events up to `position` went through the hub; False on timeout."""
        with trio.move_on_after(timeout_s):
            while self.delivered_position < position:
                await self._advanced.wait()
        return self.delivered_position >= position

    def statistics(self) -> HubStatistics:
        sessions = [s for group in self._sessions.values() for s in group]
        overflowing = [s for s in (*self._observers, *sessions) if s.overflowed]
        return HubStatistics(
            len(self._observers),
            len(sessions),
            self.delivered_position,
            self._overflowed,
            len(overflowing),
            self._live_published,
            tuple(sorted(s.peer for s in overflowing)),
        )

    # -- committed events -----------------------------------------------------------------

    def on_commit(self, events: tuple[EventRecord, ...]) -> None:
        """The storage commit listener: fan each event out, then update the live state.

        With nobody subscribed (most commits) no `Entry` is built; the position and the
        live state are kept all the same, for whoever subscribes next."""
        observers, sessions = self._observers, self._sessions
        for event in events:
            self.delivered_position = max(self.delivered_position, event.position)
            entry = None
            if observers:
                entry = Entry(event)
                for observer in observers:
                    if observer.matcher.matches(
                        event_type=event.event_type,
                        importance="authoritative",
                        project_id=event.project_id,
                        session_id=event.session_id,
                        classification=event.classification,
                    ):
                        observer.push(entry)
            if event.owner_type == "session":
                subscribers = sessions.get(event.owner_id)
                if subscribers:
                    entry = entry or Entry(event)
                    for subscriber in subscribers:
                        subscriber.push(entry)
                self._track(event)
        self._advanced.set()
        self._advanced = trio.Event()

    def _track(self, event: EventRecord) -> None:
        payload = event.payload if isinstance(event.payload, dict) else {}
        turn_id = payload.get("turnId")
        session_id = event.owner_id
        if event.event_type == "turn.dispatching" and isinstance(turn_id, str):
            # Kept after the turn ends (its last diagnostics may arrive later), bounded.
            self._dispatches.pop(session_id, None)
            if len(self._dispatches) >= MAX_PENDING_TURNS:
                del self._dispatches[next(iter(self._dispatches))]  # the oldest dispatch
            self._dispatches[session_id] = Dispatch(turn_id, event.event_id,
                                                    event.correlation_id, event.activation_id,
                                                    event.project_id)  # fmt: skip
        elif event.event_type == "turn.started" and isinstance(turn_id, str):
            self._running[session_id] = turn_id
            self._projects[session_id] = event.project_id
            for live in self._pending.pop((session_id, turn_id), ()):
                self._release(live)
        elif event.event_type == "item.completed":
            items = self._open.get(session_id)
            if items is not None:
                items.pop(str(payload.get("itemId")), None)
                if not items:
                    del self._open[session_id]
        elif event.event_type in TERMINAL_TURN_EVENTS and isinstance(turn_id, str):
            self._pending.pop((session_id, turn_id), None)
            if self._running.get(session_id) == turn_id:
                del self._running[session_id]
                self._projects.pop(session_id, None)
            items = self._open.get(session_id)
            if items is not None:
                for item_id in [k for k, v in items.items() if v.turn_id == turn_id]:
                    del items[item_id]
                if not items:
                    del self._open[session_id]

    # -- live item records ----------------------------------------------------------------

    def publish_live(
        self, record: str, session_id: str, turn_id: str, item_id: str, kind: str, text: str = ""
    ) -> None:
        """A live `item.started` or `item.delta` of a running turn (never stored per delta).

        Unknown record types are ignored: the stream's record set is closed.
        """
        if record not in ("item.started", "item.delta"):
            return
        self._live_published += 1
        live = LiveItem(record, session_id, turn_id, item_id, kind, text, self.clock.wall_ms())  # type: ignore[arg-type]
        if self._running.get(session_id) == turn_id:
            self._release(live)
            return
        key = (session_id, turn_id)
        pending = self._pending.get(key)
        if pending is None:
            if len(self._pending) >= MAX_PENDING_TURNS:
                return  # a turn that never starts cannot hold memory forever
            pending = self._pending[key] = []
        last = pending[-1] if pending else None
        if (
            last is not None
            and record == "item.delta"
            and last.record == "item.delta"
            and last.item_id == item_id
        ):
            last.text += text  # not yet seen by anyone: concatenating loses nothing
            last.coalesced += 1
        else:
            pending.append(live)

    def _release(self, live: LiveItem) -> None:
        session_id = live.session_id
        live.position = self.delivered_position
        live.project_id = self._projects.get(session_id)
        items = self._open.setdefault(session_id, {})
        item = items.get(live.item_id)
        if item is None:
            item = items[live.item_id] = _OpenItem(live.turn_id, live.kind)
        if live.record == "item.delta":
            item.number += live.coalesced
            room = MAX_OPEN_TEXT - item.length
            if room > 0 and live.text:
                piece = live.text[:room]
                item.chunks.append(piece)
                item.length += len(piece)
        live.number = item.number
        subscribers = self._sessions.get(session_id)
        if not (self._observers or subscribers):
            return  # nobody to tell: the open item above is what a later subscriber gets
        entry = Entry(live=live)
        for observer in self._observers:
            if observer.matcher.matches(
                event_type=live.record,
                importance="diagnostic",
                project_id=live.project_id,
                session_id=session_id,
                classification="operator",
            ):
                observer.push(entry)
        for subscriber in subscribers or ():
            subscriber.push(entry)

    # -- worker diagnostics ---------------------------------------------------------------

    def dispatch_of(self, session_id: str | None, turn_id: str | None) -> Dispatch | None:
        """The dispatch of the Session's turn `turn_id` (or of its last turn when None), as
        the journal told the hub; None when the hub did not see it."""
        dispatch = None if session_id is None else self._dispatches.get(session_id)
        if dispatch is not None and turn_id is not None and dispatch.turn_id != turn_id:
            return None
        return dispatch

    def publish_diagnostics(self, batch: DiagnosticBatch) -> None:
        """A worker's observation-batch as `diagnostic` records (never stored); the first
        carries the count the worker dropped before it."""
        if not batch.records:
            return
        dispatch = self.dispatch_of(batch.session_id, batch.turn_id)
        numbers = self._diagnostic_numbers
        if batch.attempt_id not in numbers and len(numbers) >= MAX_PENDING_TURNS:
            numbers.clear()  # attempts come and go: numbering restarts, IDs stay unique enough
        number = numbers.get(batch.attempt_id, 0)
        now = self.clock.wall_ms()
        project = dispatch.project_id if dispatch is not None else None
        for index, record in enumerate(batch.records):
            number += 1
            item = DiagnosticItem(
                batch.attempt_id, batch.session_id, batch.turn_id, record, now, number,
                project_id=project, position=self.delivered_position,
                dropped_before=batch.dropped if index == 0 else 0,
                causation_id=dispatch.event_id if dispatch else None,
                correlation_id=dispatch.correlation_id if dispatch else None,
                activation_id=dispatch.activation_id if dispatch else None,
            )  # fmt: skip
            entry = Entry(diagnostic=item)
            for observer in self._observers:
                if observer.matcher.matches(
                    event_type=DIAGNOSTIC_EVENT,
                    importance="diagnostic",
                    project_id=project,
                    session_id=batch.session_id,
                    classification="operator",
                ):
                    observer.push(entry)
        numbers[batch.attempt_id] = number
        self.diagnostics_published += len(batch.records)


LiveSink = Callable[[str, str, str, str, str, str], None]
