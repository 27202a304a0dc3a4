"""A real Node's worker SIGSTOPped mid-turn (docs/workers.md bounds: three missed heartbeats
fence it; a fenced worker is stopped within the stop bound, and a stopped process ignores
SIGTERM, so the stop must reach SIGKILL): the turn ends failed `worker_failed` with an error
naming the fence, the frozen process is gone, and the Session's next turn runs once on a new
worker attempt with a higher epoch."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from maia.client import open_client

from .._node_process import NodeProcess, running_node
from .._sessions import new_session, wait_turn
from ._db import alive, query, wait_gone, wait_rows

CONFIG = '{"executors": {"echo": {"kind": "echo"}}}\n'
ATTEMPTS = "SELECT pid, epoch, state FROM worker_attempts WHERE session_id = ? ORDER BY epoch"


@pytest.fixture
def node(tmp_path: Path) -> Iterator[NodeProcess]:
    with running_node(tmp_path, CONFIG, {}) as process:
        yield process


async def test_a_frozen_worker_is_fenced_killed_and_replaced(
    node: NodeProcess, tmp_path: Path
) -> None:
    """SIGSTOP of the worker running a turn: failed worker_failed with a reason, the stopped
    process killed, the next turn completed by a new attempt."""
    pid = 0
    try:
        async with open_client(home=node.home) as client:
            session_id = await new_session(client, tmp_path / "proj", "s1")
            sent = await client.call("turn.send", command_id="t1", session_id=session_id,
                                     text="/sleep 120000 never")  # fmt: skip
            turn_id = sent.turn.turn_id
            await wait_turn(client, turn_id, "running")
            ((pid, first_epoch, _),) = await trio.to_thread.run_sync(
                lambda: wait_rows(node.home, ATTEMPTS, (session_id,), lambda r: r and r[0][0])
            )
            os.kill(pid, signal.SIGSTOP)
            ended = await wait_turn(client, turn_id, "completed", "failed", "interrupted")
            assert (ended.state, ended.failure_reason) == ("failed", "worker_failed")
            shown = await client.call("turn.show", turn_id=turn_id)
            assert "fenced" in (shown.turn.failure_message or ""), shown.turn
            assert await trio.to_thread.run_sync(wait_gone, pid), "the frozen worker still runs"
            again = await client.call("turn.send", command_id="t2", session_id=session_id,
                                      text="after")  # fmt: skip
            done = await wait_turn(client, again.turn.turn_id, "completed", "failed")
            assert done.state == "completed"
            attempts = query(node.home, ATTEMPTS, (session_id,))
            assert len(attempts) == 2
            assert attempts[1][1] > first_epoch
            assert attempts[1][0] != pid
    finally:
        if pid and alive(pid):
            os.kill(pid, signal.SIGKILL)


async def test_a_killed_worker_and_a_stale_epoch_each_fail_only_their_turn(
    node: NodeProcess, tmp_path: Path
) -> None:
    """SIGKILL of the worker mid-turn: failed worker_failed naming signal 9; a worker that
    sends a frame of the previous epoch (`/stale-epoch`) is fenced: its turn fails naming the
    fence; after each, the Session's next turn completes on a new attempt."""
    async with open_client(home=node.home) as client:
        session_id = await new_session(client, tmp_path / "proj", "s1")
        sent = await client.call("turn.send", command_id="k", session_id=session_id,
                                 text="/sleep 120000 never")  # fmt: skip
        await wait_turn(client, sent.turn.turn_id, "running")
        ((pid, _, _),) = await trio.to_thread.run_sync(
            lambda: wait_rows(node.home, ATTEMPTS, (session_id,), lambda r: r and r[0][0])
        )
        os.kill(pid, signal.SIGKILL)
        killed = await wait_turn(client, sent.turn.turn_id, "completed", "failed")
        assert (killed.state, killed.failure_reason) == ("failed", "worker_failed")
        shown = await client.call("turn.show", turn_id=sent.turn.turn_id)
        assert "signal 9" in (shown.turn.failure_message or ""), shown.turn
        stale = await client.call("turn.send", command_id="s", session_id=session_id,
                                  text="/stale-epoch")  # fmt: skip
        fenced = await wait_turn(client, stale.turn.turn_id, "completed", "failed")
        assert (fenced.state, fenced.failure_reason) == ("failed", "worker_failed")
        shown = await client.call("turn.show", turn_id=stale.turn.turn_id)
        assert "fenced" in (shown.turn.failure_message or ""), shown.turn
        after = await client.call("turn.send", command_id="a", session_id=session_id,
                                  text="after")  # fmt: skip
        assert (await wait_turn(client, after.turn.turn_id, "completed", "failed")).state == (
            "completed"
        )
        epochs = [row[1] for row in query(node.home, ATTEMPTS, (session_id,))]
        assert len(epochs) == 3
        assert epochs == sorted(set(epochs))
