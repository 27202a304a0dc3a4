"""turn.interrupt of a turn its frozen worker never takes, raced and cut short: two
interrupts at once (one commandId, or two), and a Node killed -9 while the interrupt waits.
A real Node, its echo worker SIGSTOPped while warm (the prompt sits in the pipe), the SDK on
loopback. Nothing may run twice, no frozen worker may outlive its fence, and every answer is
the receipt's or a typed refusal."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from maia.client import open_client
from maia.protocol import MaiaError

from .._db_reads import query
from .._node_process import NodeProcess, running_node
from .._sessions import new_session, wait_turn
from ..maia.service.test_interrupt_unstarted import (
    ATTEMPTS,
    CONFIG,
    _started,
    _turn_events,
)
from ..review8c._db import alive, wait_gone

RECEIPTS = "SELECT count(*) FROM receipts WHERE operation_id = 'turn.interrupt'"


@pytest.fixture
def node(tmp_path: Path) -> Iterator[NodeProcess]:
    with running_node(tmp_path, CONFIG, {"MAIA_ECHO_LOG": str(tmp_path / "echo.log")}) as process:
        yield process


async def _frozen_turn(client: Any, home: Path, root: Path) -> tuple[str, str, int]:
    """(session, the dispatching turn its SIGSTOPped worker never takes, the worker's pid)."""
    session_id = await new_session(client, root, "s1")
    warm = await client.call("turn.send", command_id="t0", session_id=session_id, text="warm")
    assert (await wait_turn(client, warm.turn.turn_id, "completed", "failed")).state == (
        "completed"
    )
    ((pid, _),) = query(home, ATTEMPTS, (session_id,))
    os.kill(pid, signal.SIGSTOP)
    stuck = await client.call("turn.send", command_id="t1", session_id=session_id,
                              text="never started")  # fmt: skip
    await wait_turn(client, stuck.turn.turn_id, "dispatching")
    return session_id, stuck.turn.turn_id, pid


async def _interrupt(client: Any, command_id: str, turn_id: str) -> Any:
    """The interrupt's result, or the MaiaError it was refused with."""
    try:
        return await client.call("turn.interrupt", command_id=command_id, turn_id=turn_id)
    except MaiaError as error:
        return error


async def _waiting(client: Any, turn_id: str) -> None:
    """Return once the interrupt sent on `client` (in a task of its own) has reached the
    Node, which then waits up to 3 s for the dispatch: its frame is out (its task is blocked
    on the answer), and a request sent after it on the same connection, which the Node
    reads in order, has been answered. In place of a fixed sleep, which could end before
    the frame left. (What each test asserts holds too if the wait ended first.)"""
    with trio.fail_after(60):
        await trio.testing.wait_all_tasks_blocked()
        await client.call("turn.show", turn_id=turn_id)


async def _both(home: Path, first: str, second: str, turn_id: str) -> list[Any]:
    """Two interrupts sent at once on two connections of their own."""
    answers: list[Any] = [None, None]

    async def one(index: int, command_id: str) -> None:
        async with open_client(home=home) as other:
            answers[index] = await _interrupt(other, command_id, turn_id)

    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(one, 0, first)
            nursery.start_soon(one, 1, second)
    return answers


async def test_two_interrupts_with_one_command_id_end_the_turn_once(
    node: NodeProcess, tmp_path: Path
) -> None:
    """One answers `new`, the other `duplicate` with the same turn revision; one receipt,
    one turn.failed, the frozen worker gone and the turn never started."""
    pid = 0
    try:
        async with open_client(home=node.home) as client:
            _, turn_id, pid = await _frozen_turn(client, node.home, tmp_path / "proj")
            answers = await _both(node.home, "i1", "i1", turn_id)
            assert all(not isinstance(a, MaiaError) for a in answers), answers
            assert sorted(a.delivery for a in answers) == ["duplicate", "new"]
            assert {(a.turn.state, a.turn.failure_reason, a.turn.revision) for a in answers} == {
                ("failed", "turn_rejected", answers[0].turn.revision)
            }
            assert query(node.home, RECEIPTS) == [(1,)]
            assert _turn_events(node.home, turn_id) == [
                "turn.queued", "turn.dispatching", "turn.failed"]  # fmt: skip
            assert await trio.to_thread.run_sync(wait_gone, pid), "the frozen worker still runs"
            assert turn_id not in _started(tmp_path / "echo.log")
    finally:
        if pid and alive(pid):
            os.kill(pid, signal.SIGKILL)


async def test_two_interrupts_with_two_command_ids_one_ends_it_one_is_refused(
    node: NodeProcess, tmp_path: Path
) -> None:
    """One ends the turn (`new`); the other is refused invalid_state naming the state the
    turn ended in, and records no receipt."""
    pid = 0
    try:
        async with open_client(home=node.home) as client:
            _, turn_id, pid = await _frozen_turn(client, node.home, tmp_path / "proj")
            answers = await _both(node.home, "i1", "i2", turn_id)
            ended = [a for a in answers if not isinstance(a, MaiaError)]
            refused = [a for a in answers if isinstance(a, MaiaError)]
            assert [a.delivery for a in ended] == ["new"], answers
            assert [(e.code, e.details.get("state")) for e in refused] == [
                ("invalid_state", "failed")], refused  # fmt: skip
            assert query(node.home, RECEIPTS) == [(1,)]
            assert _turn_events(node.home, turn_id).count("turn.failed") == 1
    finally:
        if pid and alive(pid):
            os.kill(pid, signal.SIGKILL)


async def test_a_node_killed_while_the_interrupt_waits_leaves_no_frozen_worker(
    node: NodeProcess, tmp_path: Path
) -> None:
    """kill -9 of the Node during the 3 s wait: after the restart the frozen worker of the
    earlier run is gone (not left stopped for good), the turn ended without ever starting,
    the retried interrupt answers (receipt or typed refusal), and the next turn runs once."""
    pid = 0
    log = tmp_path / "echo.log"
    try:
        async with open_client(home=node.home) as client:
            session_id, turn_id, pid = await _frozen_turn(client, node.home, tmp_path / "proj")
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_interrupt, client, "i1", turn_id)
                await _waiting(client, turn_id)  # it waits for the dispatch (3 s)
                await trio.to_thread.run_sync(node.kill)
                nursery.cancel_scope.cancel()
        node.start()
        async with open_client(home=node.home) as client:
            ended = await wait_turn(client, turn_id, "completed", "failed", "interrupted")
            assert ended.state == "failed"
            again = await _interrupt(client, "i1", turn_id)
            if isinstance(again, MaiaError):
                assert (again.code, again.details.get("state")) == ("invalid_state", "failed")
            else:
                assert (again.turn.state, again.turn.failure_reason) == (
                    "failed", "turn_rejected")  # fmt: skip
            assert await trio.to_thread.run_sync(wait_gone, pid), "the frozen worker still runs"
            after = await client.call("turn.send", command_id="t2", session_id=session_id,
                                      text="after")  # fmt: skip
            done = await wait_turn(client, after.turn.turn_id, "completed", "failed")
            assert done.state == "completed"
            assert turn_id not in _started(log)
            assert _started(log).count(after.turn.turn_id) == 1
    finally:
        if pid and alive(pid):
            os.kill(pid, signal.SIGKILL)


async def test_a_stop_of_a_session_whose_frozen_worker_holds_a_dispatching_turn(
    node: NodeProcess, tmp_path: Path
) -> None:
    """session.stop while the frozen worker never took its turn: the Session stops, the
    turn ends failed without ever starting (not even once the worker is continued by the
    stop's SIGCONT), the frozen worker is gone, the stop's retry is a duplicate naming the
    same targets."""
    pid = 0
    try:
        async with open_client(home=node.home) as client:
            session_id, turn_id, pid = await _frozen_turn(client, node.home, tmp_path / "proj")
            stopped = await client.call("session.stop", command_id="stop1", session_id=session_id)
            assert stopped.delivery == "new"
            with trio.fail_after(60):
                while True:
                    waited = await client.call("session.wait", session_id=session_id,
                                               states=("stopped",))  # fmt: skip
                    if waited.satisfied:
                        break
            ended = await wait_turn(client, turn_id, "completed", "failed", "interrupted")
            assert ended.state == "failed", ended
            assert await trio.to_thread.run_sync(wait_gone, pid), "the frozen worker still runs"
            assert turn_id not in _started(tmp_path / "echo.log")
            again = await client.call("session.stop", command_id="stop1", session_id=session_id)
            assert again.delivery == "duplicate"
            first = await client.call("receipt.get", command_id="stop1")
            assert "turn.started" not in _turn_events(node.home, turn_id)
            assert ("turn", turn_id) in {(t.target_type, t.target_id)
                                         for t in first.receipt.targets}  # fmt: skip
    finally:
        if pid and alive(pid):
            os.kill(pid, signal.SIGKILL)


async def test_a_stop_while_the_interrupt_waits_ends_the_turn_once(
    node: NodeProcess, tmp_path: Path
) -> None:
    """session.stop lands during the interrupt's 3 s wait: the turn ends failed once (one
    turn.failed, never started), the interrupt answers its receipt or a typed refusal (not
    internal_error), and the Session stops with the frozen worker gone."""
    pid = 0
    try:
        async with open_client(home=node.home) as client:
            session_id, turn_id, pid = await _frozen_turn(client, node.home, tmp_path / "proj")
            answers: list[Any] = []

            async def interrupt() -> None:
                answers.append(await _interrupt(client, "i1", turn_id))

            with trio.fail_after(60):
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(interrupt)
                    await _waiting(client, turn_id)  # it waits for the dispatch
                    await client.call("session.stop", command_id="stop1", session_id=session_id)
            (answer,) = answers
            if isinstance(answer, MaiaError):
                # details.state is the turn's: "dispatching" while the stop is under way
                # (its frozen worker never took it), "failed" once the turn has ended
                assert answer.code == "invalid_state", answer
                assert answer.details["state"] in ("dispatching", "failed"), answer
            else:
                assert (answer.turn.state, answer.turn.failure_reason) == (
                    "failed", "turn_rejected")  # fmt: skip
            ended = await wait_turn(client, turn_id, "completed", "failed", "interrupted")
            assert ended.state == "failed"
            events = _turn_events(node.home, turn_id)
            assert events.count("turn.failed") == 1, events
            assert "turn.started" not in events, events
            assert await trio.to_thread.run_sync(wait_gone, pid), "the frozen worker still runs"
            assert turn_id not in _started(tmp_path / "echo.log")
    finally:
        if pid and alive(pid):
            os.kill(pid, signal.SIGKILL)
