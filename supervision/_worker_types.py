"""The values a worker handle hands out: its state, turn events, exit and statistics.

Kept apart from the handle so the Session actor (and its tests) can name them without the
machinery. `TurnEvent.kind` is Maia's own vocabulary, not the wire's event kinds.
"""

from __future__ import annotations

import contextlib
import enum
import json
from collections.abc import AsyncGenerator, Awaitable, Callable
from typing import Any

import attrs

from maia.core import MaiaError


class WorkerState(enum.Enum):
    STARTING = "starting"
    READY = "ready"
    BUSY = "busy"
    STOPPING = "stopping"
    EXITED = "exited"


TOOL_UNAVAILABLE = "tool_unavailable"


def tool_refusal(name: str) -> str:
    """The `tool-result` content refusing a tool call no tool host can answer: a JSON object
    with a typed `code`, so a worker can tell it from a tool's own failure and go on."""
    return json.dumps(
        {
            "code": TOOL_UNAVAILABLE,
            "message": f"no tool host runs here: tool {name[:128]!r} is unavailable",
            "tool": name[:128],
        },
        ensure_ascii=False,
    )


@attrs.frozen
class TurnEvent:
    """One step of a turn: `started`, `delta`, `message`, `tool-call` (data: callId, name,
    arguments; only for a turn prompted with `tools=True`: answer with `tool_result`), then
    one of `completed`, `failed`, `interrupted`, `lost`."""

    turn_id: str
    kind: str
    text: str | None = None
    data: dict[str, Any] | None = None
    sequence: int = 0  # the worker's frame sequence (what the handle acks once consumed)

    @property
    def final(self) -> bool:
        return self.kind in ("completed", "failed", "interrupted", "lost")


class TurnEvents:
    """The events of one turn, as `WorkerHandle.prompt` returns them: an async iterator
    with `aclose`, one event at a time, or `batches()`: every event ready at once, as a
    tuple (a consumer that forwards them pays per batch, not per event). Closed mid-turn,
    the worker is left to finish the turn (acknowledged). Closed before its first step,
    the prompt was never sent: the turn is withdrawn at once and the handle is ready again
    (an async generator runs no code when closed unstarted, so without this the handle
    would stay busy for good)."""

    __slots__ = ("_batched", "_events", "_started", "_withdraw")

    def __init__(
        self, events: AsyncGenerator[TurnEvent, None], withdraw: Callable[[], None]
    ) -> None:
        self._events: AsyncGenerator[TurnEvent, None] | None = events
        self._batched: AsyncGenerator[tuple[TurnEvent, ...], None] | None = None
        self._withdraw = withdraw
        self._started = False

    @classmethod
    def of_batches(
        cls, batches: AsyncGenerator[tuple[TurnEvent, ...], None], withdraw: Callable[[], None]
    ) -> TurnEvents:
        """Events from a source that yields them in batches (one per read of the pipe)."""
        events = cls.__new__(cls)
        events._events, events._batched = None, batches
        events._withdraw, events._started = withdraw, False
        return events

    def __aiter__(self) -> TurnEvents:
        return self

    def __anext__(self) -> Awaitable[TurnEvent]:
        self._started = True
        if self._events is None:
            assert self._batched is not None
            self._events = _flatten(self._batched)
        return self._events.__anext__()  # no coroutine frame of our own on the hot path

    def batches(self) -> AsyncGenerator[tuple[TurnEvent, ...], None]:
        """Iterate the turn's events a batch at a time (not mixed with single events)."""
        self._started = True
        if self._batched is None:
            assert self._events is not None
            self._batched = _singles(self._events)
        return self._batched

    async def aclose(self) -> None:
        if not self._started:
            self._started = True
            self._withdraw()
        if self._events is not None:
            await self._events.aclose()
        if self._batched is not None:
            await self._batched.aclose()


async def _flatten(
    batches: AsyncGenerator[tuple[TurnEvent, ...], None],
) -> AsyncGenerator[TurnEvent, None]:
    async with contextlib.aclosing(batches):
        async for batch in batches:
            for event in batch:
                yield event


async def _singles(
    events: AsyncGenerator[TurnEvent, None],
) -> AsyncGenerator[tuple[TurnEvent, ...], None]:
    async with contextlib.aclosing(events):
        async for event in events:
            yield (event,)


WIRE_KINDS = {
    "turn.started": "started",
    "message.delta": "delta",
    "message.completed": "message",
    "item.started": "item.started",  # the agent adapters' structured items (docs/agents.md)
    "item.delta": "item.delta",
    "item.completed": "item.completed",
    "conversation": "conversation",  # the harness's own conversation id, to resume it
    "turn.completed": "completed",
    "turn.failed": "failed",
}


@attrs.frozen
class DiagnosticBatch:
    """One observation-batch of a worker attempt, for the Node's observation stream: its
    records (at most 128) and how many the worker's queue dropped before it."""

    attempt_id: str
    session_id: str | None  # the activation's sessionId
    turn_id: str | None  # the turn running when it arrived
    records: tuple[dict[str, Any], ...]
    dropped: int


# Where a supervisor hands each batch (the Node's observation hub). Called in the reader's
# task: it must never block or raise.
DiagnosticsSink = Callable[[DiagnosticBatch], None]


@attrs.frozen
class ExitInfo:
    """How an attempt ended: exit status or signal, the fence reason, the stderr tail."""

    returncode: int | None
    signal: int | None
    fence_reason: str | None
    stop_phase: str  # exited | interrupt | terminate | kill
    swept: tuple[int, ...]
    stderr_tail: str


@attrs.frozen
class WorkerStatistics:
    attempt_id: str
    epoch: int
    pid: int
    state: WorkerState
    heartbeat_age_ms: int
    turns: int
    events: int
    diagnostics_received: int
    diagnostics_dropped: int
    fence_reason: str | None


class WorkerFailed(MaiaError):
    """The worker cannot serve: it was fenced or exited. `info` says how, once known."""

    def __init__(self, message: str, info: ExitInfo | None = None) -> None:
        super().__init__("unavailable", message, {"target": "worker"})
        self.info = info
