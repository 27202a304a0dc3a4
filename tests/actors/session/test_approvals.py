"""Approvals in the Session actor on real storage, with the in-process fake worker and
MockClock: a `maia.approval` tool call becomes a pending approval and the Session reads
waiting-approval; the answer reaches the worker once, is idempotent by commandId, and a
second answer is refused `approval_not_pending`; an interrupt withdraws it; any other tool
is refused at once (`tool_unavailable`)."""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio
import trio.testing

from actors.session import Command, InterruptTurn, RespondApproval, read_approval
from maia.config import SessionSettings, UserConfig
from maia.core import MaiaError
from maia.protocol import new_id
from storage import open_storage

from .._virtual_time import driven_clock
from ._fake_workers import FakeWorkers
from ._harness import CLOCK, Harness
from ._harness import open_harness as _open
from ._open import open_session_runtime


@pytest.fixture
def jump_clock() -> trio.testing.MockClock:
    """Virtual time that only the test moves: no autojump; `_open` and `_open_with` drive it."""
    return trio.testing.MockClock()


def _command(text: str) -> Command:
    return Command(new_id("command"), "local-user", f"sha256:{text}")


async def _pending(h: Harness, session_id: str) -> dict[str, Any]:
    """The Session's pending approval, once the Session waits on it (bounded)."""
    with trio.fail_after(60):
        while True:
            found = await h.store.read(lambda c: c.execute(
                "SELECT approval_id FROM approvals WHERE session_id = ? AND state = 'pending'",
                (session_id,)).fetchone())  # fmt: skip
            if found is not None and (await h.session_row(session_id))[0] == "waiting-approval":
                return await h.store.read(functools.partial(read_approval,
                                                            approval_id=str(found[0])))  # fmt: skip
            await h.runtime.notifier.wait(session_id, 5)


async def test_an_allowed_approval_reaches_the_worker_once(
    tmp_path: Path, jump_clock: trio.testing.MockClock
) -> None:
    """Pending, then allowed: the worker gets the decision, the turn completes with it, the
    Session runs again; a retry is a duplicate, another answer is refused."""
    async with _open(tmp_path) as h:
        session_id = await h.session()
        turn_id = await h.send(session_id, "/ask maia.approval")
        approval = await _pending(h, session_id)
        assert await h.session_row(session_id) == ("waiting-approval", "waiting_approval")
        assert (approval["kind"], approval["summary"]) == ("command", "run maia.approval")
        assert approval["canRemember"] is True
        command = _command("allow")
        answer = RespondApproval(command, approval["approvalId"], "allow", True, None)
        first = await h.runtime.ask(session_id, answer)
        again = await h.runtime.ask(session_id, answer)
        assert (first.delivery, again.delivery) == ("new", "duplicate")
        assert first.result["approval"]["state"] == "allowed"
        turn = await h.wait_turn(turn_id, "completed", "failed")
        assert json.loads(turn.output_text or "") == {"decision": "allow", "remember": True}
        (handle,) = h.workers.spawned
        assert len(handle.tool_results) == 1
        with pytest.raises(MaiaError) as refused:
            await h.runtime.ask(session_id, RespondApproval(
                _command("deny"), approval["approvalId"], "deny"))  # fmt: skip
        assert refused.value.code == "approval_not_pending"
        assert refused.value.details["state"] == "allowed"
        assert await h.session_row(session_id) == ("idle", "idle")  # its worker warm


async def test_an_interrupt_withdraws_the_pending_approval(
    tmp_path: Path, jump_clock: trio.testing.MockClock
) -> None:
    """Interrupted while it waits: the approval is withdrawn (never denied), the turn reads
    interrupted, and answering it afterwards is refused."""
    async with _open(tmp_path) as h:
        session_id = await h.session()
        turn_id = await h.send(session_id, "/ask maia.approval")
        approval = await _pending(h, session_id)
        await h.runtime.ask(session_id, InterruptTurn(_command("stop"), turn_id, None))
        turn = await h.wait_turn(turn_id, "interrupted", "failed", "completed")
        assert turn.state == "interrupted"
        after = await h.store.read(lambda c: read_approval(c, approval["approvalId"]))
        assert after["state"] == "withdrawn"
        with pytest.raises(MaiaError) as refused:
            await h.runtime.ask(session_id, RespondApproval(
                _command("late"), approval["approvalId"], "allow"))  # fmt: skip
        assert refused.value.code == "approval_not_pending"
        assert h.workers.spawned[0].tool_results == []


async def test_another_tool_is_refused_at_once(
    tmp_path: Path, jump_clock: trio.testing.MockClock
) -> None:
    """A tool the Node does not host gets an error result at once; no approval is made."""
    async with _open(tmp_path) as h:
        session_id = await h.session()
        turn = await h.wait_turn(await h.send(session_id, "/ask web.search"), "completed")
        ((call_id, ok, content),) = h.workers.spawned[0].tool_results
        assert (call_id, ok) == ("call-1", False)
        assert json.loads(content)["code"] == "tool_unavailable"
        assert turn.output_text == content
        count = await h.store.read(lambda c: c.execute("SELECT count(*) FROM approvals")
                                   .fetchone()[0])  # fmt: skip
        assert count == 0


async def test_a_configured_timeout_expires_the_approval_and_tells_the_worker(
    tmp_path: Path, jump_clock: trio.testing.MockClock
) -> None:
    """With sessions.approvalTimeoutMs set, an unanswered approval reads expired at its
    expiresAt, the worker hears a deny saying so, and a late answer is refused."""
    config = attrs.evolve(UserConfig(), sessions=SessionSettings(approval_timeout_ms=90_000))
    async with _open_with(tmp_path, config) as h:
        session_id = await h.session()
        turn_id = await h.send(session_id, "/ask maia.approval")
        approval = await _pending(h, session_id)
        assert "expiresAt" in approval
        turn = await h.wait_turn(turn_id, "completed", "failed")
        answer = json.loads(turn.output_text or "")
        assert answer["decision"] == "deny"
        assert "approvalTimeoutMs (90000 ms)" in answer["message"]
        expired = functools.partial(read_approval, approval_id=approval["approvalId"])
        after = await h.store.read(expired)
        assert after["state"] == "expired"
        with pytest.raises(MaiaError) as refused:
            await h.runtime.ask(session_id, RespondApproval(
                _command("late"), approval["approvalId"], "allow"))  # fmt: skip
        assert refused.value.details["state"] == "expired"


@asynccontextmanager
async def _open_with(tmp_path: Path, config: UserConfig) -> AsyncIterator[Harness]:
    async with (
        trio.open_nursery() as nursery,
        open_storage(tmp_path / "maia.db", clock=CLOCK, synchronous="NORMAL") as store,
    ):
        workers = FakeWorkers(nursery)
        opened = open_session_runtime(store, clock=CLOCK, config=config,
                                      worker_supervisor=workers)  # fmt: skip
        async with driven_clock(store), opened as runtime:
            yield Harness(store, runtime, workers, tmp_path)
        nursery.cancel_scope.cancel()
