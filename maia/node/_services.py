"""What the Node's parts share: its configuration and the bundle of running services.

The root tree's children fill `NodeServices` as they start (storage, then the Session
services, then the API server) and empty it as they stop; handlers reach it through
`Call.services`. A part that is not running reads as `unavailable`, never as a crash.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import attrs

from maia.core import Clock, MaiaError, SystemClock, format_timestamp_ms
from storage import Storage

from ._home import NodeHome
from ._status_counts import CountsCache
from ._status_wire import StatusWire


@attrs.frozen
class NodeConfig:
    """How to run a Node: its home, its API port (0: a free one) and its clock."""

    home: NodeHome
    port: int = 0
    clock: Clock = attrs.field(factory=SystemClock)
    # More children of the root tree, started after the API in this order: (name, start)
    # with start(services, ctx, task_status=...) (the machine link, maia.machines).
    children: tuple[tuple[str, Any], ...] = ()


@attrs.frozen
class Mailbox:
    """One bounded mailbox as node.status reports it."""

    name: str
    depth: int
    capacity: int


@attrs.define
class NodeServices:
    """What handlers reach through `Call.services`.

    Later issues add their services here (actor registries, the worker supervisor, the
    scheduler) and report their load through `mailbox_sources` and `worker_count`.
    """

    config: NodeConfig
    started_wall_ms: int
    started_monotonic_ms: int
    storage: Storage | None = None
    api: Any = None  # the ApiServer serving now
    tree: Any = None  # the root supervision.Supervisor (its statistics())
    sessions: Any = None  # maia.service.ServiceContext: the Session runtime and its handlers
    observations: Any = None  # maia.observe.ObservationHub: the streams' fan-out
    mailbox_sources: list[Callable[[], Iterable[Mailbox]]] = attrs.field(factory=list)
    worker_count: Callable[[], int] = lambda: 0
    node_id: str = ""  # kept from the last storage open, so status can answer without it
    epoch: int = 0
    status_counts: CountsCache = attrs.field(factory=CountsCache)
    status_wire: StatusWire = attrs.field(factory=StatusWire)
    _started_at: str | None = attrs.field(default=None, init=False)

    @property
    def started_at(self) -> str:
        """When this run started, as an RFC 3339 timestamp (formatted once)."""
        if self._started_at is None:
            self._started_at = format_timestamp_ms(self.started_wall_ms)
        return self._started_at

    @property
    def clock(self) -> Clock:
        return self.config.clock

    def storage_or_raise(self) -> Storage:
        """The open storage. Raises `MaiaError(unavailable)` while it is not open."""
        if self.storage is None:
            raise MaiaError(
                "unavailable", "storage is unavailable: not open", {"target": "storage"}
            )
        return self.storage

    def sessions_or_raise(self) -> Any:
        """The Session services' context. Raises `MaiaError(unavailable)` while stopped."""
        if self.sessions is None:
            raise MaiaError(
                "unavailable", "sessions are unavailable: not running", {"target": "sessions"}
            )
        return self.sessions

    def mailbox_depths(self) -> list[Mailbox]:
        return [box for source in self.mailbox_sources for box in source()]

    def live_workers(self) -> int:
        return self.worker_count()
