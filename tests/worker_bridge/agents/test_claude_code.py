"""The claude-code worker against the real Claude Code CLI and a loopback Anthropic mock."""

from __future__ import annotations

import json
import uuid
from contextlib import AbstractAsyncContextManager
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio

from supervision.workers import WorkerHandle

from . import _anthropic as mock
from ._drive import (
    allow,
    base_env,
    conversation,
    deny,
    final,
    item_types,
    items,
    message_text,
    need_claude,
    run_turn,
    spec,
    started_worker,
    usage,
    work_dir,
)
from ._scenarios import interrupted_then_next, killed_then_resumed, stale_conversation
from ._sse_server import SseServer
from ._support import assert_completed, claude_env, mock_worker, of_type, tokens

TOUCH = {"command": "touch approved.txt", "description": "Create the file"}


@pytest.fixture
def claude() -> str:
    return need_claude()


@pytest.fixture
def script() -> mock.AnthropicScript:
    return mock.AnthropicScript()


def claude_worker(
    tmp_path: Path, server: SseServer, **kwargs: Any
) -> AbstractAsyncContextManager[WorkerHandle]:
    return mock_worker("claude_code", tmp_path, claude_env(tmp_path, server), **kwargs)


def texts_sent(request: Any) -> str:
    """Everything a main-loop request carries in its messages, as one string."""
    return json.dumps(request.body["messages"])


async def test_two_turns_share_one_conversation_with_per_turn_usage(
    claude: str, tmp_path: Path, server: SseServer, script: mock.AnthropicScript
) -> None:
    """Turn 2's request carries turn 1's prompt and answer; usage is per turn, as the mock's."""
    script.add(
        mock.text("Hello there", {"input": 100, "output": 7}, thinking="pondering"),
        mock.text("Second answer", {"input": 30, "output": 4, "cache_read": 5}),
    )
    with trio.fail_after(120):
        async with claude_worker(tmp_path, server) as handle:
            first = await run_turn(handle, "turn-1", "remember the word kumquat")
            second = await run_turn(handle, "turn-2", "which word?")
    assert_completed(first, second)
    bound = conversation(first)
    assert bound is not None
    assert bound["harness"] == "claude-code"
    assert not bound["resumed"]
    uuid.UUID(bound["conversationId"])
    assert message_text(first) == "Hello there"
    assert message_text(second) == "Second answer"
    assert "reasoning" in item_types(first)
    (reasoning,) = of_type(first, "reasoning")
    assert reasoning["text"] == "pondering"
    assert [e.text for e in first if e.kind == "item.delta"] == ["pondering"]
    assert len(script.main) == 2
    sent = texts_sent(script.main[1])
    assert "remember the word kumquat" in sent
    assert "Hello there" in sent
    one, two = usage(first), usage(second)
    assert tokens(first) == (100, 7)
    assert tokens(second, "cacheReadTokens") == (30, 4, 5)
    assert one["costMicros"] > 0
    assert two["currency"] == "USD"
    end = final(second).data
    assert end is not None
    assert end["usage"] == {k: v for k, v in two.items() if k not in ("id", "type")}


async def test_allowed_bash_touch_creates_the_file(
    claude: str, tmp_path: Path, server: SseServer, script: mock.AnthropicScript
) -> None:
    """A Bash tool_use asks for approval; allowed, the command runs and the turn completes."""
    script.add(
        mock.tool_use("Bash", TOUCH, {"input": 200, "output": 9}),
        mock.text("Created it.", {"input": 300, "output": 11}),
    )
    with trio.fail_after(120):
        async with claude_worker(tmp_path, server) as handle:
            events = await run_turn(handle, "turn-1", "make approved.txt", allow())
    assert_completed(events)
    (request,) = of_type(events, "approval_request", "item.started")
    assert request["kind"] == "command"
    assert "touch approved.txt" in request["summary"]
    (answered,) = of_type(events, "approval_request")
    assert answered["decision"] == "allow"
    (command,) = of_type(events, "command")
    assert command["command"] == "touch approved.txt"
    assert command["exitCode"] == 0
    assert (tmp_path / "work" / "approved.txt").exists()
    assert tokens(events) == (500, 20)


async def test_denied_bash_touch_leaves_no_file_and_the_turn_goes_on(
    claude: str, tmp_path: Path, server: SseServer, script: mock.AnthropicScript
) -> None:
    """Denied, the command never runs; the model gets the denial and the turn completes."""
    script.add(
        mock.tool_use("Bash", TOUCH, {"input": 20, "output": 3}),
        mock.text("Understood, I will not.", {"input": 30, "output": 5}),
    )
    with trio.fail_after(120):
        async with claude_worker(tmp_path, server) as handle:
            events = await run_turn(handle, "turn-1", "make approved.txt", deny("no files"))
    assert_completed(events)
    assert not (tmp_path / "work" / "approved.txt").exists()
    assert message_text(events) == "Understood, I will not."
    (command,) = of_type(events, "command")
    assert command["status"] == "failed"
    assert "no files" in texts_sent(script.main[1])


async def test_interrupt_mid_turn_then_the_conversation_goes_on(
    claude: str, tmp_path: Path, server: SseServer, script: mock.AnthropicScript
) -> None:
    """An interrupt ends a streaming turn `interrupted`; the next turn runs in the same
    conversation (its request carries the earlier prompt)."""
    script.add(
        mock.hanging("Thinking out lo", {"input": 10, "output": 2}),
        mock.text("Back again", {"input": 12, "output": 3}),
    )
    with trio.fail_after(120):
        async with claude_worker(tmp_path, server) as handle:
            second = await interrupted_then_next(handle, "count to a million", "stop counting")
    assert_completed(second)
    assert message_text(second) == "Back again"
    assert "count to a million" in texts_sent(script.main[1])


async def test_killed_worker_resumes_the_same_conversation(
    claude: str, tmp_path: Path, server: SseServer, script: mock.AnthropicScript
) -> None:
    """A worker killed between turns: the next worker, given the conversation id, resumes
    it (`--resume`), and the mock sees turn 1's messages in turn 2's request."""
    script.add(
        mock.text("First reply", {"input": 40, "output": 6}),
        mock.text("Resumed reply", {"input": 41, "output": 7}),
    )
    with trio.fail_after(120):
        open_worker = partial(claude_worker, tmp_path, server)
        bound, second = await killed_then_resumed(
            open_worker, "the code word is heron", "what was the code word?"
        )
    assert_completed(second)
    again = conversation(second)
    assert again == {
        "harness": "claude-code",
        "conversationId": bound["conversationId"],
        "resumed": True,
    }
    sent = texts_sent(script.main[1])
    assert "the code word is heron" in sent
    assert "First reply" in sent
    assert tokens(second) == (41, 7)


async def test_unknown_resume_id_starts_a_fresh_conversation_and_says_so(
    claude: str, tmp_path: Path, server: SseServer, script: mock.AnthropicScript
) -> None:
    """A conversation id the CLI does not know: a new conversation, an error item and a
    `conversation` event naming the replaced id; the turn itself completes."""
    script.add(mock.text("Fresh start", {"input": 5, "output": 2}))
    stale = str(uuid.uuid4())
    with trio.fail_after(120):
        bound, events = await stale_conversation(partial(claude_worker, tmp_path, server), stale)
    assert bound["resumed"] is False
    (error,) = of_type(events, "error")
    assert stale in error["message"]


async def test_api_error_fails_the_turn_with_the_reason(
    claude: str, tmp_path: Path, server: SseServer, script: mock.AnthropicScript
) -> None:
    """An API error from the model server fails the turn with a reason naming it; the
    worker serves the next turn."""
    # Claude Code 2.1.332 retries a 400 silently five times, then gives up on the turn.
    script.add(
        *[mock.api_error(400, "the mock refuses this request")] * 6,
        mock.text("Fine now", {"input": 3, "output": 1}),
    )
    with trio.fail_after(120):
        async with claude_worker(tmp_path, server) as handle:
            failed = await run_turn(handle, "turn-1", "hello")
            again = await run_turn(handle, "turn-2", "hello again")
    assert final(failed).kind == "failed"
    assert "the mock refuses this request" in (final(failed).text or "")
    assert_completed(again)


async def test_missing_binary_fails_each_turn_with_how_to_fix_it(tmp_path: Path) -> None:
    """A `command` that does not exist fails the turn naming it; the worker stays up."""
    env = base_env(tmp_path / "home")
    options = {"command": str(tmp_path / "no-such-claude")}
    with trio.fail_after(60):
        async with started_worker(spec("claude_code", work_dir(tmp_path), env, options)) as handle:
            first = await run_turn(handle, "turn-1", "hello")
            second = await run_turn(handle, "turn-2", "hello")
    for events in (first, second):
        assert final(events).kind == "failed"
        assert "no-such-claude" in (final(events).text or "")


async def test_remembered_approval_is_not_asked_again(
    claude: str, tmp_path: Path, server: SseServer, script: mock.AnthropicScript
) -> None:
    """Allowed with `remember`, the CLI's own suggestions become rules (updatedPermissions):
    the same command in the next turn runs without asking."""
    script.add(
        mock.tool_use("Bash", TOUCH, {"input": 10, "output": 2}),
        mock.text("Done once.", {"input": 11, "output": 2}),
        mock.tool_use("Bash", TOUCH, {"input": 12, "output": 2}),
        mock.text("Done twice.", {"input": 13, "output": 2}),
    )
    with trio.fail_after(120):
        async with claude_worker(tmp_path, server) as handle:
            first = await run_turn(handle, "turn-1", "make approved.txt", allow(remember=True))
            second = await run_turn(handle, "turn-2", "again", deny("asked twice"))
    assert_completed(first, second)
    assert [i["remember"] for i in items(first) if i["type"] == "approval_request"] == [True]
    assert of_type(second, "approval_request") == []
    (command,) = of_type(second, "command")
    assert command["exitCode"] == 0


async def test_bypass_mode_runs_without_asking_as_root(
    claude: str, tmp_path: Path, server: SseServer, script: mock.AnthropicScript
) -> None:
    """`permissionMode: bypassPermissions` (with IS_SANDBOX=1, which root needs) runs the
    command with no approval request."""
    script.add(
        mock.tool_use("Bash", TOUCH, {"input": 10, "output": 2}),
        mock.text("Done.", {"input": 11, "output": 2}),
    )
    options = {"permissionMode": "bypassPermissions"}
    with trio.fail_after(120):
        async with claude_worker(tmp_path, server, options=options) as handle:
            events = await run_turn(handle, "turn-1", "make approved.txt", deny("asked"))
    assert_completed(events)
    assert of_type(events, "approval_request") == []
    assert (tmp_path / "work" / "approved.txt").exists()
