"""turn.interrupt of a turn its worker never takes (a real Node, its echo worker SIGSTOPped
while warm, so the prompt sits in the pipe): after the bounded wait the turn ends `failed`
`turn_rejected` with the interrupt's receipt, the worker is fenced and dies (it never starts
the turn, not even once it is continued), and the Session's next turn runs once on a new
worker attempt. A reused commandId's conflict fences nothing."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
import trio

from maia.client import open_client
from maia.protocol import MaiaError, TurnResult
from maia.service import ServiceContext, _turns
from maia.service._projects import project_add
from maia.service._sessions import session_create

from ..._db_reads import query, wait_rows
from ..._node_process import NodeProcess, running_node
from ..._sessions import new_session, wait_turn
from ...review8c._db import alive, wait_gone
from ._helpers import params

CONFIG = '{"executors": {"echo": {"kind": "echo", "env": ["MAIA_ECHO_LOG"]}}}\n'
ATTEMPTS = "SELECT pid, epoch FROM worker_attempts WHERE session_id = ? ORDER BY epoch"
TURN_EVENTS = (
    "SELECT event_type, payload FROM events WHERE event_type LIKE 'turn.%' ORDER BY position"
)


@pytest.fixture
def node(tmp_path: Path) -> Iterator[NodeProcess]:
    with running_node(tmp_path, CONFIG, {"MAIA_ECHO_LOG": str(tmp_path / "echo.log")}) as process:
        yield process


def _started(log: Path) -> list[str]:
    """The turn ids the echo worker started, in order (one line per prompt it began)."""
    return [line.split()[0] for line in log.read_text().splitlines()] if log.exists() else []


def _turn_events(home: Path, turn_id: str) -> list[str]:
    rows = query(home, TURN_EVENTS)
    return [kind for kind, payload in rows if orjson.loads(payload).get("turnId") == turn_id]


async def test_an_interrupt_ends_a_turn_the_frozen_worker_never_took(
    node: NodeProcess, tmp_path: Path
) -> None:
    """failed turn_rejected with a receipt naming the turn; no turn.started; the worker gone
    without starting it; the next turn completes once, on a higher epoch."""
    log = tmp_path / "echo.log"
    pid = 0
    try:
        async with open_client(home=node.home) as client:
            session_id = await new_session(client, tmp_path / "proj", "s1")
            warm = await client.call("turn.send", command_id="t0", session_id=session_id,
                                     text="warm")  # fmt: skip
            assert (await wait_turn(client, warm.turn.turn_id, "completed", "failed")).state == (
                "completed"
            )
            ((pid, first_epoch),) = query(node.home, ATTEMPTS, (session_id,))
            os.kill(pid, signal.SIGSTOP)  # heartbeats stop too: the fence is >= 10 s away
            stuck = await client.call("turn.send", command_id="t1", session_id=session_id,
                                      text="never started")  # fmt: skip
            turn_id = stuck.turn.turn_id
            await wait_turn(client, turn_id, "dispatching")
            ended = await client.call("turn.interrupt", command_id="i1", turn_id=turn_id)
            assert ended.delivery == "new"
            assert (ended.turn.state, ended.turn.failure_reason) == ("failed", "turn_rejected")
            receipt = await client.call("receipt.get", command_id="i1")
            assert receipt.receipt.operation_id == "turn.interrupt"
            assert [(t.target_id, t.result_revision) for t in receipt.receipt.targets
                    if t.target_type == "turn"] == [(turn_id, ended.turn.revision)]  # fmt: skip
            again = await client.call("turn.interrupt", command_id="i1", turn_id=turn_id)
            assert again.delivery == "duplicate"
            assert _turn_events(node.home, turn_id) == [
                "turn.queued",
                "turn.dispatching",
                "turn.failed",
            ]
            assert await trio.to_thread.run_sync(wait_gone, pid), "the frozen worker still runs"
            after = await client.call("turn.send", command_id="t2", session_id=session_id,
                                      text="after")  # fmt: skip
            done = await wait_turn(client, after.turn.turn_id, "completed", "failed")
            assert done.state == "completed"
            attempts = await trio.to_thread.run_sync(
                lambda: wait_rows(node.home, ATTEMPTS, (session_id,), lambda r: len(r) == 2)
            )
            assert attempts[1][1] > first_epoch
            assert _started(log) == [warm.turn.turn_id, after.turn.turn_id]
            shown = await client.call("turn.show", turn_id=turn_id)
            assert (shown.turn.state, shown.turn.failure_reason) == ("failed", "turn_rejected")
    finally:
        if pid and alive(pid):
            os.kill(pid, signal.SIGKILL)


async def test_a_reused_command_id_fences_nothing(
    ctx: ServiceContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An interrupt whose commandId a receipt already holds (for another turn) answers
    idempotency_conflict at once (the key is checked before any wait) and leaves the frozen
    worker alone: continued, it runs the turn. (In-process services, real echo workers; the
    dispatch wait shortened to 0.2 s, so a wait would give the turn up.)"""
    monkeypatch.setattr(_turns, "DISPATCH_WAIT_S", 0.2)
    (tmp_path / "app").mkdir()
    project = await project_add(
        ctx, params("project.add", {"commandId": "p", "rootPath": str(tmp_path / "app")})
    )
    created = await session_create(ctx, params("session.create", {
        "commandId": "s", "projectId": project.project.project_id}))  # fmt: skip
    session_id = created.session.session_id

    async def send(command_id: str, text: str) -> str:
        sent = await _turns.turn_send(ctx, params("turn.send", {
            "commandId": command_id, "sessionId": session_id, "text": text}))  # fmt: skip
        return sent.turn.turn_id

    async def interrupt(command_id: str, turn_id: str) -> TurnResult:
        return await _turns.turn_interrupt(
            ctx, params("turn.interrupt", {"commandId": command_id, "turnId": turn_id})
        )

    async def state(turn_id: str) -> str:
        waited = await _turns.turn_wait(ctx, params("turn.wait", {"turnId": turn_id}))
        return waited.turn.state

    assert await state(await send("w", "warm")) == "completed"
    attempt = "SELECT pid FROM worker_attempts WHERE session_id = ?"
    pid = await ctx.read(lambda c: c.execute(attempt, (session_id,)).fetchone()[0])
    os.kill(pid, signal.SIGSTOP)
    try:
        stuck, behind = await send("x", "stuck"), await send("y", "behind")
        assert (await interrupt("i0", behind)).turn.failure_reason == "turn_rejected"
        with pytest.raises(MaiaError) as conflict:
            await interrupt("i0", stuck)
        assert conflict.value.code == "idempotency_conflict"
    finally:
        os.kill(pid, signal.SIGCONT)
    with trio.fail_after(60):
        while (ended := await state(stuck)) == "dispatching":
            pass
    assert ended == "completed"
