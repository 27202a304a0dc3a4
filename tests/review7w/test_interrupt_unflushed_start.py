"""s7-review5: turn.interrupt of a turn whose worker reported its start while the actor still
buffers it (not flushed yet: the flush timer has not fired) writes the start and the
interrupt, and the turn ends interrupted with its start (real Session actor, fake worker,
MockClock, real SQLite file)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from actors.session import Command, InterruptTurn
from maia.core import MaiaError
from maia.protocol import new_id
from tests.actors.session._harness import open_harness


async def _interrupt(h: Any, session_id: str, message: InterruptTurn) -> str:
    """The interrupted turn's state as answered, or the refusal's code."""
    try:
        result = await h.runtime.ask(session_id, message)
    except MaiaError as error:
        return f"refused {error.code}: {error.message}"
    return str(result.result["turn"]["state"])


@pytest.fixture
def jump_clock() -> trio.testing.MockClock:
    """Virtual time that only the test moves: `driven_clock` drives it while quiet."""
    return trio.testing.MockClock()


async def test_an_interrupt_of_a_buffered_start_interrupts_the_turn(
    tmp_path: Path, jump_clock: trio.testing.MockClock
) -> None:
    """The start still in the buffer: the interrupt is accepted, the turn ends interrupted."""
    async with open_harness(tmp_path) as h:
        session_id = await h.session()
        turn_id = await h.send(session_id, "/sleep 60000 never")
        (actor,) = h.runtime.registry.live_actors()
        session = actor._batch.__self__  # type: ignore[union-attr]  # the SessionActor
        buffer = session.progress.buffer
        for _ in range(100_000):  # bounded; steps of 0.1 ms of virtual time, well within the
            # flush delay: the start is seen in the buffer before its flush is due
            if buffer.started_unflushed(turn_id):
                break
            await trio.sleep(0.0001)
        assert buffer.started_unflushed(turn_id), "the worker's start never reached the buffer"
        command = Command(new_id("command"), "local-user", "sha256:interrupt")
        answer = await _interrupt(h, session_id, InterruptTurn(command, turn_id, None))
        if answer != "running":  # refused: once its start is flushed, an interrupt works
            await h.wait_turn(turn_id, "running")
            again = Command(new_id("command"), "local-user", "sha256:again")
            assert await _interrupt(h, session_id, InterruptTurn(again, turn_id, None)) == (
                "running"
            )
        ended = await h.wait_turn(turn_id, "interrupted", "failed", "completed")
    assert answer == "running"  # before the fix: refused role_denied
    assert ended.state == "interrupted"
    assert ended.started_at is not None
