"""`invalid_state` names the turn's real state (`details.state`), never a phrase: the queue
answered "not running" / "not dispatched" for a turn its worker did not hold. The queue
says `queued` when it holds the turn and nothing else (it keeps no turn states); the Session
actor adds the state of the turn it holds."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from actors.session import Command, InterruptTurn, StopSession
from actors.session._queue import Abandon, Close, Interrupt, QueueState, Send, Worker, step
from maia.core import MaiaError
from maia.protocol import TURN_STATES, new_id

from ._harness import open_harness


@pytest.fixture
def jump_clock() -> trio.testing.MockClock:
    """Virtual time that only the test's driver moves (no autojump)."""
    return trio.testing.MockClock()


def _command(text: str) -> Command:
    return Command(new_id("command"), "local-user", f"sha256:{text}")


def test_the_queue_names_no_state_it_does_not_hold() -> None:
    """Abandon of a queued turn: `queued`; interrupt/abandon of the active turn while its
    worker stops (session.stop), of an abandoned turn, or of one the queue never held: no
    `state` from the queue (the actor adds the turn's)."""
    state = QueueState(worker=Worker.READY)
    state, _ = step(state, Send("t1"), 0)
    state, _ = step(state, Send("t2"), 0)
    with pytest.raises(MaiaError) as queued:
        step(state, Abandon("t2"), 0)
    assert (queued.value.code, queued.value.details) == (
        "invalid_state", {"resource": "turn", "id": "t2", "state": "queued"})  # fmt: skip
    closing, _ = step(state, Close(), 0)
    assert (closing.active, closing.worker) == ("t1", Worker.STOPPING)
    abandoned, _ = step(state, Abandon("t1"), 0)
    assert (abandoned.active, abandoned.worker) == (None, Worker.STOPPING)
    for held, event in ((closing, Interrupt("t1")), (closing, Abandon("t1")),
                        (abandoned, Interrupt("t1")), (abandoned, Abandon("t1")),
                        (abandoned, Interrupt("t9"))):  # fmt: skip
        with pytest.raises(MaiaError) as caught:
            step(held, event, 0)
        assert caught.value.code == "invalid_state"
        assert caught.value.details == {"resource": "turn", "id": event.turn_id}
        assert caught.value.message.startswith(f"turn {event.turn_id} is not ")


def test_a_closed_queue_claims_no_session_state() -> None:
    """A send to a closed queue (stopping, stopped, failed or archived alike) is refused
    `invalid_state` with no `state`: it said `stopped` of a stopping Session. The actor names
    the true state (`closed_refusal`, tests/actors/session/test_send_to_closed.py)."""
    state, _ = step(QueueState(worker=Worker.READY), Send("t1"), 0)
    closing, _ = step(state, Close(), 0)
    assert (closing.closed, closing.worker) == (True, Worker.STOPPING)  # a stopping Session
    with pytest.raises(MaiaError) as caught:
        step(closing, Send("t2"), 0)
    assert (caught.value.code, caught.value.details) == ("invalid_state", {"resource": "session"})
    assert "stopped" not in caught.value.message


async def test_an_interrupt_while_the_worker_stops_names_the_running_state(
    tmp_path: Path, jump_clock: trio.testing.MockClock
) -> None:
    """session.stop of a Session whose turn runs, its worker slow to stop: interrupting the
    turn is refused `invalid_state` with `details.state` `running` (it was "not running")."""
    async with open_harness(tmp_path) as h:
        session_id = await h.session()
        turn_id = await h.send(session_id, "/sleep 60000 slow")
        await h.wait_turn(turn_id, "running")
        (handle,) = h.workers.live()
        let_go = trio.Event()
        plain_stop = handle.stop

        async def slow_stop(reason: str = "stop") -> Any:
            await let_go.wait()
            return await plain_stop(reason)

        handle.stop = slow_stop
        await h.runtime.ask(session_id, StopSession(_command("stop"), None))
        with pytest.raises(MaiaError) as caught:
            await h.runtime.ask(session_id, InterruptTurn(_command("interrupt"), turn_id, None))
        details = caught.value.details
        assert caught.value.code == "invalid_state"
        assert (details["resource"], details["id"], details["state"]) == (
            "turn", turn_id, "running")  # fmt: skip
        assert details["state"] in TURN_STATES
        assert caught.value.message == f"turn {turn_id} is not running"
        let_go.set()
        ended = await h.wait_turn(turn_id, "completed", "failed", "interrupted")
        assert ended.state in ("failed", "interrupted")
