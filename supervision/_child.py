"""What a supervisor knows about its children: specs, contexts, exceptions, statistics.

A child is `async def child(ctx: ChildContext, *, task_status=trio.TASK_STATUS_IGNORED)`.
`_Child` is one incarnation: its own shielded cancel scope (so the supervisor, not an outer
cancellation, decides when and in which order it stops), its readiness and its end.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import attrs
import trio

from ._restart import RestartType, Strategy

ChildFn = Callable[..., Awaitable[Any]]


class SupervisorGaveUp(Exception):
    """A supervisor stopped all its children: restarts exceeded its intensity."""


class ChildStartFailed(Exception):
    """A child failed (or timed out) before it was ready, while its supervisor started."""


@attrs.frozen
class ChildSpec:
    """How to run, restart and stop one child."""

    name: str
    start: ChildFn = attrs.field(eq=False)
    restart: RestartType = RestartType.PERMANENT
    shutdown_ms: int = 0  # grace after `stop_requested` before cancellation
    ready_timeout_ms: int = 15_000


@attrs.define(eq=False)
class ChildContext:
    """What a running child is told: who it is, which attempt, and when to stop."""

    name: str
    attempt: int
    stop_requested: trio.Event = attrs.field(factory=trio.Event)


@attrs.frozen
class ChildStatistics:
    name: str
    restart: RestartType
    running: bool
    restarts: int
    consecutive_failures: int
    backoff_ms: int  # the delay of a pending restart, 0 when none


@attrs.frozen
class SupervisorStatistics:
    name: str
    state: str  # new | starting | running | stopping | stopped | gave_up
    strategy: Strategy
    restarts: int
    killed: int  # children cancelled after their shutdown timeout
    children: tuple[ChildStatistics, ...]


@attrs.define(eq=False)
class _Child:
    spec: ChildSpec
    ctx: ChildContext
    scope: trio.CancelScope = attrs.field(factory=lambda: trio.CancelScope(shield=True))
    ready: trio.Event = attrs.field(factory=trio.Event)  # set when ready *or* done
    is_ready: bool = False
    done: trio.Event = attrs.field(factory=trio.Event)
    stopping: bool = False
    error: BaseException | None = None


class _Status:
    """The `task_status` a child gets: readiness goes to the supervisor, not a nursery."""

    def __init__(self, child: _Child) -> None:
        self._child = child

    def started(self, value: object = None) -> None:
        self._child.is_ready = True
        self._child.ready.set()
