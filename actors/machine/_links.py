"""What this Control Node's run knows of each machine's link: in memory, never decided on
from storage (a restart forgets it, and every link starts again behind a barrier).

The listener (`maia.machines`) opens a link when a connection authenticates, counts each
status and refused frame, and closes it; `machine.show` reads it; `machine.revoke` closes a
revoked machine's link at once through `revoke_hook`. `AckLedger` remembers, per evidence
source, how far this run's `ack` frames went (the listener notes each one it sends), so a
record sent again after a reconnect that was already stored is acknowledged again (its
first acknowledgement may have been lost) and never stored twice.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import attrs


@attrs.define
class LinkState:
    """One machine's live link."""

    machine_id: str
    connection: int
    heartbeats: int = 0
    last_report_sequence: int = 0
    last_heartbeat_ms: int | None = None  # Control's monotonic reading
    refused_frames: int = 0
    barrier: bool = True  # no report has confirmed a grant issued since this Control start
    close: Callable[[], None] = attrs.field(default=lambda: None, repr=False)
    send: Callable[[object], Awaitable[None]] | None = attrs.field(default=None, repr=False)
    # The optional frames the Node named at its upgrade (`maia.machines._gate`): none for an
    # older Node, which would refuse them (an `abandon` it cannot act on fences nothing).
    frames: frozenset[str] = frozenset()

    def carries(self, frame_type: str) -> bool:
        """Whether a frame of this optional type sent now reaches a Node that acts on it."""
        return self.send is not None and frame_type in self.frames


@attrs.define
class LinkBoard:
    """The open links by machine ID; one per machine (a newer connection replaces it)."""

    links: dict[str, LinkState] = attrs.field(factory=dict)
    opened: int = 0
    dropped_ms: dict[str, int] = attrs.field(factory=dict)  # machine -> when its link dropped

    def open(self, machine_id: str, close: Callable[[], None],
             send: Callable[[object], Awaitable[None]] | None = None,
             frames: frozenset[str] = frozenset()) -> LinkState:  # fmt: skip
        """Register a new authenticated connection; an older one of that machine is closed."""
        old = self.links.get(machine_id)
        if old is not None:
            old.close()
        self.opened += 1
        link = LinkState(machine_id, self.opened, close=close, send=send, frames=frames)
        self.links[machine_id] = link
        return link

    def drop(self, link: LinkState, now_ms: int | None = None) -> None:
        """Forget `link` when its connection ended (a newer one stays); `now_ms` is
        Control's monotonic reading then (how long a machine has been away)."""
        if self.links.get(link.machine_id) is link:
            del self.links[link.machine_id]
            if now_ms is not None:
                self.dropped_ms[link.machine_id] = now_ms

    def away_ms(self, machine_id: str, now_ms: int) -> int | None:
        """How long the machine has had no link (None: it has one now). A machine not
        connected at all in this Control run counts as away since ever."""
        if machine_id in self.links:
            return None
        dropped = self.dropped_ms.get(machine_id)
        return now_ms - dropped if dropped is not None else now_ms + (1 << 62)

    def get(self, machine_id: str) -> LinkState | None:
        return self.links.get(machine_id)

    def revoke(self, machine_id: str) -> None:
        """Close the machine's link now (its credential was revoked)."""
        link = self.links.pop(machine_id, None)
        if link is not None:
            link.close()


@attrs.define
class AckLedger:
    """Per evidence source, the highest sequence this run acknowledged (so stored)."""

    through: dict[str, int] = attrs.field(factory=dict)

    def stored(self, source: str, through: int) -> None:
        self.through[source] = max(self.through.get(source, 0), through)

    def already(self, source: str, sequence: int) -> int | None:
        """The acknowledgement to send again when `sequence` was stored already, else None."""
        done = self.through.get(source, 0)
        return done if sequence <= done else None
