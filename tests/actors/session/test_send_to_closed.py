"""turn.send to a Session that takes no more turns, over the real API (a real Node, its real
echo worker told to ignore stop requests, then given a long turn, so `session.stop` leaves
the Session `stopping` until the stop bound ends the worker): refused `invalid_state`, its
details naming the Session's true state (`stopping`, then the state it ended in) and its
message what to do next; nothing is queued."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from maia.client import open_client
from maia.protocol import MaiaError

from ..._node_process import NodeProcess, running_node
from ..._sessions import new_session, wait_turn

CONFIG = '{"executors": {"echo": {"kind": "echo"}}}\n'
BOUND_S = 60.0  # the stubborn worker's stop takes the whole stop bound (interrupt + SIGTERM)


@pytest.fixture
def node(tmp_path: Path) -> Iterator[NodeProcess]:
    with running_node(tmp_path, CONFIG, {}) as process:
        yield process


async def _refused_send(client: object, session_id: str, command_id: str) -> MaiaError:
    with pytest.raises(MaiaError) as refused:
        await client.call("turn.send", command_id=command_id,  # type: ignore[attr-defined]
                          session_id=session_id, text="too late")  # fmt: skip
    return refused.value


async def test_a_send_to_a_stopping_then_stopped_session_names_its_state(
    node: NodeProcess, tmp_path: Path
) -> None:
    """stopping: invalid_state with details.state `stopping` (never `stopped`), the Session's
    id, and 'create a new Session'; once ended, the state it ended in (`stopped`, or `failed`
    if the stop's own timeout came first); no turn was queued by either."""
    async with open_client(home=node.home) as client:
        session_id = await new_session(client, tmp_path / "proj", "s1")
        warm = await client.call("turn.send", command_id="t0", session_id=session_id,
                                 text="/ignore-term stubborn")  # fmt: skip
        assert (await wait_turn(client, warm.turn.turn_id, "completed")).state == "completed"
        busy = await client.call("turn.send", command_id="t-busy", session_id=session_id,
                                 text="/sleep 600000 busy")  # fmt: skip
        await wait_turn(client, busy.turn.turn_id, "running")
        stopped = await client.call("session.stop", command_id="stop", session_id=session_id)
        assert stopped.session.state == "stopping"  # its worker ignores the stop requests

        error = await _refused_send(client, session_id, "t1")
        assert error.code == "invalid_state"
        assert error.details["state"] == "stopping", error.details
        assert error.details["resource"] == "session"
        assert error.details["id"] == session_id
        assert error.message.startswith("the Session is stopping: it takes no more turns")
        assert "create a new Session" in error.message
        assert (await client.call("session.show", session_id=session_id)).session.state == (
            "stopping"
        )  # the refusal was given while it was stopping

        with trio.fail_after(BOUND_S):
            while True:
                waited = await client.call("session.wait", session_id=session_id,
                                           states=("stopped", "failed"),
                                           wait_milliseconds=4000)  # fmt: skip
                if waited.satisfied:
                    break
        ended = waited.session.state
        error = await _refused_send(client, session_id, "t2")
        assert (error.code, error.details["state"]) == ("invalid_state", ended)
        assert "it takes no more turns" in error.message
        queue = await client.call("turn.queue.list", session_id=session_id)
        assert queue.active_turn is None
        assert list(queue.queue) == []
