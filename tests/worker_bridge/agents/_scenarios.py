"""Scenarios the agent workers' tests share: the driving, and what holds for every harness.

Each takes `open_worker`, the test's own way to start its worker (`**kwargs` go to its
`spec`, e.g. `activation`), so the harness-specific assertions stay in the tests.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from supervision.workers import TurnEvent, WorkerHandle

from ._drive import conversation, final, interrupt_on, run_turn

OpenWorker = Callable[..., AbstractAsyncContextManager[WorkerHandle]]


async def interrupted_then_next(
    handle: WorkerHandle, slow_text: str, next_text: str
) -> list[TurnEvent]:
    """Turn 1 interrupted at its first delta ends `interrupted`; turn 2's events after it."""
    first = await run_turn(
        handle, "turn-1", slow_text, on_event=interrupt_on(handle, "turn-1", "delta")
    )
    second = await run_turn(handle, "turn-2", next_text)
    assert final(first).kind == "interrupted", final(first)
    return second


async def killed_then_resumed(
    open_worker: OpenWorker, first_text: str, second_text: str
) -> tuple[dict[str, Any], list[TurnEvent]]:
    """Turn 1 in a worker that is then SIGKILLed, turn 2 in a new worker given turn 1's
    conversation id: that `conversation` event, and turn 2's events."""
    async with open_worker() as handle:
        first = await run_turn(handle, "turn-1", first_text)
        os.kill(handle.pid, signal.SIGKILL)
    bound = conversation(first)
    assert bound is not None
    async with open_worker(activation={"conversationId": bound["conversationId"]}) as handle:
        second = await run_turn(handle, "turn-2", second_text)
    return bound, second


async def stale_conversation(
    open_worker: OpenWorker, stale: str, text: str = "hello"
) -> tuple[dict[str, Any], list[TurnEvent]]:
    """A worker given a conversation id its harness does not know: the turn completes in a
    new conversation whose `conversation` event (returned, with the turn's events) names
    the replaced id."""
    async with open_worker(activation={"conversationId": stale}) as handle:
        events = await run_turn(handle, "turn-1", text)
    assert final(events).kind == "completed", final(events)
    bound = conversation(events)
    assert bound is not None
    assert bound["replaced"] == stale
    assert bound["conversationId"] != stale
    return bound, events
