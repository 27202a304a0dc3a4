"""The console's local picture of the Node's Sessions: what completion reads on each key.

Completion must not cost a request per keystroke, so the console keeps Session IDs, titles
and states here: seeded by one `session.list` at start, then kept fresh by the live event
feed (`session.created`, `session.renamed`, `session.archived`, state changes). The cache is
bounded; past the bound the least recently touched Session is forgotten (completion of it
then falls back to the Node's own reference resolution when the command runs).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

MAX_CACHED_SESSIONS = 10_000
_ENDED_STATES = frozenset({"stopped", "failed"})


@attrs.frozen
class FeedEvent:
    """One live event as the console uses it, whatever stream it came from."""

    event_type: str
    session_id: str | None = None
    turn_id: str | None = None
    occurred_at: str = ""
    payload: Mapping[str, Any] = attrs.field(factory=dict)

    @classmethod
    def from_journal(cls, wire: Mapping[str, Any]) -> FeedEvent:
        """From a journal event in wire form (an `events.read` event or an observation
        record: both carry eventType, sessionId, occurredAt and payload)."""
        payload = wire.get("payload")
        return cls(
            event_type=str(wire.get("eventType", "")),
            session_id=wire.get("sessionId"),
            turn_id=wire.get("turnId") or (payload or {}).get("turnId"),
            occurred_at=str(wire.get("occurredAt", "")),
            payload=payload if isinstance(payload, dict) else {},
        )


@attrs.frozen
class CachedSession:
    """What completion shows for one Session."""

    session_id: str
    title: str | None
    state: str

    @property
    def live(self) -> bool:
        return self.state not in _ENDED_STATES


class SessionCache:
    """Session IDs, titles and states, bounded, updated from a listing and from events."""

    def __init__(self, limit: int = MAX_CACHED_SESSIONS) -> None:
        self._limit = limit
        self._sessions: OrderedDict[str, CachedSession] = OrderedDict()

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, session_id: str) -> CachedSession | None:
        return self._sessions.get(session_id)

    def sessions(self) -> list[CachedSession]:
        """Newest touched first."""
        return list(reversed(self._sessions.values()))

    def seed(self, sessions: Iterable[Mapping[str, Any]]) -> None:
        """Add Sessions in wire form (`session.list` items); archived ones are skipped."""
        for item in sessions:
            if item.get("archived"):
                continue
            self._put(CachedSession(str(item["sessionId"]), item.get("title"), item["state"]))

    def apply(self, event: FeedEvent) -> bool:
        """Fold one event in; returns whether the cache changed."""
        sid = event.session_id
        if sid is None or not event.event_type.startswith("session."):
            return False
        known = self._sessions.get(sid)
        payload = event.payload
        if event.event_type == "session.created":
            self._put(CachedSession(sid, payload.get("title"), "idle"))
            return True
        if event.event_type == "session.archived":
            return self._sessions.pop(sid, None) is not None
        if known is None:
            return False
        if event.event_type == "session.renamed":
            self._put(attrs.evolve(known, title=payload.get("title")))
            return True
        state = payload.get("state")
        if isinstance(state, str) and state != known.state:
            self._put(attrs.evolve(known, state=state))
            return True
        return False

    def _put(self, entry: CachedSession) -> None:
        self._sessions.pop(entry.session_id, None)
        self._sessions[entry.session_id] = entry
        while len(self._sessions) > self._limit:
            self._sessions.popitem(last=False)

    def matches(self, prefix: str) -> list[tuple[str, CachedSession]]:
        """(completion text, Session) for IDs and titles that start with (or, for titles,
        contain) `prefix`, case-insensitively; titles first, live Sessions first."""
        needle = prefix.casefold()
        titled: list[tuple[int, str, CachedSession]] = []
        ids: list[tuple[str, CachedSession]] = []
        for entry in self.sessions():
            title = entry.title
            if title:
                folded = title.casefold()
                if folded.startswith(needle):
                    titled.append((0 if entry.live else 2, title, entry))
                elif needle and needle in folded:
                    titled.append((1 if entry.live else 3, title, entry))
            if entry.session_id.casefold().startswith(needle):
                ids.append((entry.session_id, entry))
        titled.sort(key=lambda row: row[0])
        ids.sort(key=lambda row: not row[1].live)
        return [(text, entry) for _, text, entry in titled] + ids
