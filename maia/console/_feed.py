"""The live event feed behind the console: one small interface, one interim implementation.

`EventFeed` is what the console needs: `catch_up()` (skip what already happened, so the
console prints only what happens while it runs) and `follow()` (the events from then on).
Until the SDK serves the observation stream (`/api/v1/observations`), `JournalFeed` reads
the durable journal through `events.read` with its signed cursor: pages while more are
ready, then one bounded read every `poll_s`. A cursor the Node no longer honours
(`cursor_reset_required`, `invalid_cursor`) makes it catch up again and say so.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, Protocol

import anyio

from maia.protocol import MaiaError

from ._cache import FeedEvent

PAGE_LIMIT = 500  # events.read's own maximum
DEFAULT_POLL_S = 0.25
_RESET_CODES = frozenset({"cursor_reset_required", "invalid_cursor"})


class EventFeed(Protocol):
    """A source of live events for the console."""

    async def catch_up(self) -> None:
        """Move past everything that already happened. Raises `MaiaError`."""

    def follow(self) -> AsyncIterator[FeedEvent]:
        """Events from the caught-up position on, until cancelled. Raises `MaiaError`."""


class JournalFeed:
    """`EventFeed` over `events.read` (interim: the observation stream replaces it)."""

    def __init__(self, client: Any, *, poll_s: float = DEFAULT_POLL_S) -> None:
        self._client = client
        self._poll_s = poll_s
        self._position: dict[str, Any] = {"kind": "start"}
        self.resets = 0

    async def _page(self) -> dict[str, Any]:
        page: dict[str, Any] = await self._client.request(
            "events.read", {"position": self._position, "limit": PAGE_LIMIT}
        )
        self._position = {"kind": "cursor", "cursor": page["nextCursor"]}
        return page

    async def catch_up(self) -> None:
        """Page to the journal's end (bounded pages of 500), keeping only the cursor."""
        while (await self._page())["hasMore"]:
            pass

    async def follow(self) -> AsyncIterator[FeedEvent]:
        while True:
            try:
                page = await self._page()
            except MaiaError as error:
                if error.code not in _RESET_CODES:
                    raise
                self.resets += 1
                self._position = {"kind": "start"}
                await self.catch_up()
                yield FeedEvent("console.gap", payload={"reason": error.code})
                continue
            for wire in page["events"]:
                yield FeedEvent.from_journal(wire)
            if not page["hasMore"]:
                await anyio.sleep(self._poll_s)
