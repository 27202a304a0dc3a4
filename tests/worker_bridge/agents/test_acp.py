"""The acp worker against a test agent built on the agent-client-protocol package."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio

from supervision.workers import MemoryEpochSource, WorkerHandle, open_worker_supervisor

from ._drive import (
    TIMINGS,
    allow,
    base_env,
    conversation,
    deny,
    final,
    interrupt_on,
    item_types,
    items,
    message_text,
    run_turn,
    spec,
    started_worker,
    usage,
    work_dir,
)
from ._scenarios import interrupted_then_next, killed_then_resumed, stale_conversation

AGENT = Path(__file__).with_name("acp_test_agent.py")
INTERPRETER = os.path.abspath(sys.executable)


@pytest.fixture(autouse=True)
def _needs_acp() -> None:
    try:
        import acp  # noqa: F401
    except ImportError:
        pytest.fail("agent-client-protocol is missing: .venv/bin/pip install -e '.[agents]'")


@asynccontextmanager
async def acp_worker(tmp_path: Path, **kwargs: Any) -> AsyncIterator[WorkerHandle]:
    env = {**base_env(tmp_path / "home"), "ACP_TEST_STATE": str(tmp_path / "acp-state.json")}
    options = {"argv": json.dumps([INTERPRETER, str(AGENT)])}
    async with started_worker(spec("acp", work_dir(tmp_path), env, options, **kwargs)) as handle:
        yield handle


async def test_prompt_streams_chunks_reasoning_and_usage(tmp_path: Path) -> None:
    """A prompt streams the agent's chunks as message deltas, its thought as reasoning,
    and the prompt's usage; the second prompt lands in the same session."""
    with trio.fail_after(60):
        async with acp_worker(tmp_path) as handle:
            first = await run_turn(handle, "turn-1", "hello agent")
            second = await run_turn(handle, "turn-2", "again")
    assert final(first).kind == "completed", final(first)
    assert message_text(first) == "echo #1: hello agent"
    assert len([e for e in first if e.kind == "delta"]) == 3
    assert message_text(second) == "echo #2: again"
    assert "reasoning" in item_types(first)
    assert (usage(first)["inputTokens"], usage(first)["outputTokens"]) == (11, 4)
    bound = conversation(first)
    assert bound is not None
    assert bound["conversationId"].startswith("acp-")
    assert conversation(second) is None  # one agent process, one session


@pytest.mark.parametrize(
    ("decide", "made", "reply"),
    [
        (allow(), True, "ran it (allow)"),
        (allow(remember=True), True, "ran it (always)"),
        (deny(), False, "did not run it"),
    ],
)
async def test_permission_request_is_an_approval(
    tmp_path: Path, decide: Any, made: bool, reply: str
) -> None:
    """`session/request_permission` becomes an approval request; allow picks allow_once,
    remember picks allow_always, deny picks reject_once (the command does not run)."""
    with trio.fail_after(60):
        async with acp_worker(tmp_path) as handle:
            events = await run_turn(handle, "turn-1", "/permission", decide)
    assert final(events).kind == "completed", final(events)
    (request,) = [i for i in items(events, "item.started") if i["type"] == "approval_request"]
    assert request["kind"] == "command"
    assert request["summary"] == "touch approved.txt"
    assert request["canRemember"] is True
    assert (tmp_path / "work" / "approved.txt").exists() is made
    assert message_text(events) == reply
    (command,) = [i for i in items(events) if i["type"] == "command"]
    assert command["status"] == ("completed" if made else "failed")


async def test_cancel_ends_the_turn_interrupted_and_the_session_goes_on(tmp_path: Path) -> None:
    """An interrupt sends `session/cancel`; the prompt ends `cancelled`, reported as
    interrupted, and the next prompt works in the same session."""
    with trio.fail_after(60):
        async with acp_worker(tmp_path) as handle:
            second = await interrupted_then_next(handle, "/slow", "still there?")
    assert message_text(second) == "echo #2: still there?"


async def test_pending_permission_is_cancelled_by_an_interrupt(tmp_path: Path) -> None:
    """An interrupt while a permission waits answers it `cancelled` (never allowed)."""
    with trio.fail_after(60):
        async with acp_worker(tmp_path) as handle:
            events = await run_turn(
                handle,
                "turn-1",
                "/permission",
                None,
                on_event=interrupt_on(handle, "turn-1", "tool-call"),
            )
    assert final(events).kind == "interrupted", final(events)
    assert not (tmp_path / "work" / "approved.txt").exists()
    (answered,) = [i for i in items(events) if i["type"] == "approval_request"]
    assert answered["decision"] == "withdrawn"


async def test_killed_worker_loads_the_same_session(tmp_path: Path) -> None:
    """A new worker given the session id loads it (`session/load`) and the agent's
    memory goes on; an id the agent does not know starts a new session and says so."""
    with trio.fail_after(60):
        open_worker = partial(acp_worker, tmp_path)
        bound, second = await killed_then_resumed(open_worker, "one", "two")
        _, third = await stale_conversation(open_worker, "acp-unknown", "three")
    assert conversation(second) == {**bound, "resumed": True}
    assert message_text(second) == "echo #2: two"
    assert message_text(third) == "echo #1: three"
    assert "error" in item_types(third)


async def test_missing_argv_and_missing_binary_fail_the_turn(tmp_path: Path) -> None:
    """No `argv`, or an agent that cannot start: the turn fails naming why; no crash."""
    work = tmp_path / "work"
    work.mkdir()
    env = base_env(tmp_path / "home")
    with trio.fail_after(60):
        async with open_worker_supervisor(MemoryEpochSource(), TIMINGS) as supervisor:
            bare = await supervisor.start_worker(spec("acp", work, env))
            await bare.wait_initialized()
            no_argv = await run_turn(bare, "turn-1", "hello")
            options = {"argv": json.dumps([str(tmp_path / "no-such-agent")])}
            missing = await supervisor.start_worker(spec("acp", work, env, options))
            await missing.wait_initialized()
            no_binary = await run_turn(missing, "turn-1", "hello")
    assert final(no_argv).kind == "failed"
    assert "argv" in (final(no_argv).text or "")
    assert final(no_binary).kind == "failed"
    assert "no-such-agent" in (final(no_binary).text or "")
