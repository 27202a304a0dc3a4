"""The bottom toolbar: the Node's state, from `node.status`, refreshed on events or every
few seconds (never more than one request in flight, never faster than `min_gap_s`). When the
connection is lost it is the tracker that reconnects the console's client, at that pace."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import anyio
import attrs

from maia.core import MaiaError

_ENDED_STATES = frozenset({"stopped", "failed"})
REFRESH_S = 5.0
MIN_GAP_S = 0.5


@attrs.frozen
class NodeState:
    """What the toolbar shows."""

    reachable: bool
    node_id: str = ""
    live_sessions: int = 0
    queued_turns: int = 0
    live_workers: int = 0
    problem: str = ""
    pending_approvals: int = 0
    more_approvals: bool = False  # more pending than one page counted

    @classmethod
    def from_status(
        cls, status: Mapping[str, Any], pending: int = 0, more: bool = False
    ) -> NodeState:
        """From `node.status` in wire form (and the count of pending approvals, `more`
        when a page did not hold them all)."""
        by_state: Mapping[str, int] = status.get("sessionsByState") or {}
        live = sum(n for state, n in by_state.items() if state not in _ENDED_STATES)
        return cls(
            reachable=True,
            node_id=str(status.get("nodeId", "")),
            live_sessions=live,
            queued_turns=int(status.get("queuedTurns", 0)),
            live_workers=int(status.get("liveWorkers", 0)),
            pending_approvals=pending,
            more_approvals=more,
        )

    def toolbar(self) -> str:
        if not self.reachable:
            return f" node unreachable ({self.problem}) · start it with: maia node start --detach"
        more = "+" if self.more_approvals else ""
        waiting = (
            f"approvals {self.pending_approvals}{more} pending · " if self.pending_approvals else ""
        )
        return (
            f" {waiting}sessions {self.live_sessions} live · turns {self.queued_turns} queued ·"
            f" workers {self.live_workers} live │ {self.node_id[:14]}… │ Tab · Ctrl-R history"
            " · Ctrl-D quits"
        )


class StatusTracker:
    """Keeps a `NodeState` fresh; `poke()` asks for a refresh soon (coalesced)."""

    def __init__(
        self,
        client: Any,
        on_change: Callable[[NodeState], None],
        *,
        refresh_s: float = REFRESH_S,
        min_gap_s: float = MIN_GAP_S,
    ) -> None:
        self._client = client
        self._on_change = on_change
        self._refresh_s = refresh_s
        self._min_gap_s = min_gap_s
        self._poked = anyio.Event()
        self.state = NodeState(reachable=False, problem="not asked yet")

    def poke(self) -> None:
        self._poked.set()

    async def refresh(self) -> NodeState:
        try:
            status = await self._ask()
            state = NodeState.from_status(status, *await self._pending())
        except MaiaError as error:
            state = NodeState(reachable=False, problem=error.code)
        if state != self.state:
            self.state = state
            self._on_change(state)
        return state

    async def _ask(self) -> Any:
        try:
            return await self._client.request("node.status")
        except MaiaError as error:
            if error.code != "unavailable":
                raise
        # The connection is gone (the Node stopped or restarted): connect again, at the
        # tracker's pace, so the console's commands find a live client when the Node is back.
        await self._client.reconnect()
        return await self._client.request("node.status")

    async def _pending(self) -> tuple[int, bool]:
        """Pending approvals on one page (at most 100 counted) and whether more follow; 0
        from a Node without approvals."""
        try:
            found = await self._client.request("approval.list", {"state": "pending", "limit": 100})
        except MaiaError as error:
            if error.code == "unavailable":
                raise
            return 0, False
        return len(found.get("approvals") or ()), bool(found.get("nextCursor"))

    async def serve(self) -> None:
        """Refresh until cancelled."""
        while True:
            await self.refresh()
            await anyio.sleep(self._min_gap_s)
            with anyio.move_on_after(max(0.0, self._refresh_s - self._min_gap_s)):
                await self._poked.wait()
            self._poked = anyio.Event()
