"""The live event feed behind the console: one small interface over the observation stream.

`EventFeed` is what the console needs: `catch_up()` (start at the journal's head, so the
console prints only what happens while it runs) and `follow()` (the events from then on).
`StreamFeed` reads the SDK's `observe_events` (`/api/v1/observations`): authoritative records
only, a snapshot of zero records (just the head), then live batches. The SDK feed resumes by
itself from its signed cursor after a dropped connection, so nothing is printed twice or
lost; a `reset` (the cursor could not be served) is passed on as a `console.gap` event.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Protocol

import anyio

from maia.client import observe_events
from maia.core import MaiaError

from ._cache import FeedEvent

FIRST_FRAME_S = 10.0
QUERY: dict[str, Any] = {"importance": ["authoritative"], "limit": 0}


class EventFeed(Protocol):
    """A source of live events for the console."""

    async def catch_up(self) -> None:
        """Move to the head of the journal. Raises `MaiaError`."""

    def follow(self) -> AsyncIterator[FeedEvent]:
        """Events from the caught-up position on, until cancelled. Raises `MaiaError`."""


class StreamFeed:
    """`EventFeed` over the observation stream of the client's Node."""

    def __init__(self, client: Any) -> None:
        self._feed = observe_events(client, dict(QUERY))
        self._started = False

    async def catch_up(self) -> None:
        """Read the first (empty) snapshot; once only: later calls resume from the cursor.

        Raises `MaiaError(unavailable)` when no frame comes within 10 s.
        """
        if self._started:
            return
        try:
            with anyio.fail_after(FIRST_FRAME_S):
                await self._feed.__anext__()
        except TimeoutError as error:
            raise MaiaError(
                "unavailable", "the observation stream did not start", {"target": "node"}
            ) from error
        self._started = True

    async def follow(self) -> AsyncIterator[FeedEvent]:
        async for frame in self._feed:
            if frame.type == "reset":
                yield FeedEvent("console.gap", payload={"reason": "reset"})
            elif frame.type == "event":
                for record in frame.records:
                    yield FeedEvent.from_journal(record)

    async def aclose(self) -> None:
        await self._feed.aclose()
