"""The codex worker against the real Codex CLI (`codex app-server`) and a loopback
OpenAI Responses mock."""

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

from . import _openai as mock
from ._drive import (
    allow,
    conversation,
    deny,
    final,
    items,
    message_text,
    need_codex,
    run_turn,
)
from ._scenarios import interrupted_then_next, killed_then_resumed, stale_conversation
from ._sse_server import SseServer
from ._support import assert_completed, codex_env, mock_worker, of_type, tokens

TOUCH = {"cmd": "touch approved.txt"}


@pytest.fixture
def codex() -> str:
    return need_codex()


@pytest.fixture
def script() -> mock.OpenAIScript:
    return mock.OpenAIScript()


def codex_worker(
    tmp_path: Path, server: SseServer, **kwargs: Any
) -> AbstractAsyncContextManager[WorkerHandle]:
    return mock_worker("codex", tmp_path, codex_env(tmp_path, server), **kwargs)


def sent(request: Any) -> str:
    return json.dumps(request.body["input"])


async def test_two_turns_share_one_thread_with_per_turn_usage(
    codex: str, tmp_path: Path, server: SseServer, script: mock.OpenAIScript
) -> None:
    """Turn 2's request carries turn 1's prompt and answer; usage is per turn, as the mock's."""
    script.add(
        mock.text("Hello there", {"input": 100, "output": 7}),
        mock.text("Second answer", {"input": 130, "output": 4, "cached": 90}),
    )
    with trio.fail_after(120):
        async with codex_worker(tmp_path, server) as handle:
            first = await run_turn(handle, "turn-1", "remember the word kumquat")
            second = await run_turn(handle, "turn-2", "which word?")
    assert_completed(first, second)
    bound = conversation(first)
    assert bound is not None
    assert bound["harness"] == "codex"
    assert bound["resumed"] is False
    assert message_text(first) == "Hello there"
    assert message_text(second) == "Second answer"
    assert len(script.main) == 2
    assert "remember the word kumquat" in sent(script.main[1])
    assert "Hello there" in sent(script.main[1])
    assert tokens(first) == (100, 7)
    assert tokens(second, "cacheReadTokens") == (130, 4, 90)


async def test_allowed_touch_runs_the_command(
    codex: str, tmp_path: Path, server: SseServer, script: mock.OpenAIScript
) -> None:
    """An exec_command call asks for approval; allowed, the file exists and the turn completes."""
    script.add(
        mock.function_call("exec_command", TOUCH, {"input": 200, "output": 9}),
        mock.text("Created it.", {"input": 300, "output": 11}),
    )
    with trio.fail_after(120):
        async with codex_worker(tmp_path, server) as handle:
            events = await run_turn(handle, "turn-1", "make approved.txt", allow())
    assert_completed(events)
    (request,) = of_type(events, "approval_request", "item.started")
    assert request["kind"] == "command"
    assert "touch approved.txt" in request["summary"]
    (command,) = of_type(events, "command")
    assert command["exitCode"] == 0
    assert "touch approved.txt" in command["command"]
    assert (tmp_path / "work" / "approved.txt").exists()
    assert tokens(events) == (500, 20)


async def test_denied_touch_leaves_no_file_and_the_turn_goes_on(
    codex: str, tmp_path: Path, server: SseServer, script: mock.OpenAIScript
) -> None:
    """Declined, the command never runs; the model is told and the turn completes."""
    script.add(
        mock.function_call("exec_command", TOUCH, {"input": 20, "output": 3}),
        mock.text("Understood.", {"input": 30, "output": 5}),
    )
    with trio.fail_after(120):
        async with codex_worker(tmp_path, server) as handle:
            events = await run_turn(handle, "turn-1", "make approved.txt", deny())
    assert_completed(events)
    assert not (tmp_path / "work" / "approved.txt").exists()
    assert message_text(events) == "Understood."
    assert len(script.main) == 2


async def test_interrupt_mid_turn_then_the_thread_goes_on(
    codex: str, tmp_path: Path, server: SseServer, script: mock.OpenAIScript
) -> None:
    """`turn/interrupt` ends a streaming turn `interrupted`; the next turn runs in the same
    thread (its request carries the earlier prompt)."""
    script.add(
        mock.hanging("Counting: one, two"), mock.text("Back again", {"input": 12, "output": 3})
    )
    with trio.fail_after(120):
        async with codex_worker(tmp_path, server) as handle:
            second = await interrupted_then_next(handle, "count to a million", "stop counting")
    assert_completed(second)
    assert message_text(second) == "Back again"
    assert "count to a million" in sent(script.main[-1])


async def test_killed_worker_resumes_the_same_thread(
    codex: str, tmp_path: Path, server: SseServer, script: mock.OpenAIScript
) -> None:
    """A worker killed between turns: the next one resumes the thread (`thread/resume`) and
    the mock sees turn 1's messages in turn 2's request."""
    script.add(
        mock.text("First reply", {"input": 40, "output": 6}),
        mock.text("Resumed reply", {"input": 41, "output": 7}),
    )
    with trio.fail_after(120):
        open_worker = partial(codex_worker, tmp_path, server)
        bound, second = await killed_then_resumed(
            open_worker, "the code word is heron", "what was the code word?"
        )
    assert_completed(second)
    again = conversation(second)
    assert again == {"harness": "codex", "conversationId": bound["conversationId"], "resumed": True}
    assert "the code word is heron" in sent(script.main[1])
    assert "First reply" in sent(script.main[1])
    assert tokens(second) == (41, 7)


async def test_unknown_thread_starts_a_fresh_one_and_says_so(
    codex: str, tmp_path: Path, server: SseServer, script: mock.OpenAIScript
) -> None:
    """A thread id Codex does not know: a new thread, an error item and a `conversation`
    event naming the replaced id; the turn completes."""
    script.add(mock.text("Fresh start", {"input": 5, "output": 2}))
    stale = str(uuid.uuid4())
    with trio.fail_after(120):
        _, events = await stale_conversation(partial(codex_worker, tmp_path, server), stale)
    assert any(stale in i["message"] for i in items(events) if i["type"] == "error")


async def test_api_error_fails_the_turn_with_the_reason(
    codex: str, tmp_path: Path, server: SseServer, script: mock.OpenAIScript
) -> None:
    """An API error from the model server fails the turn naming it; the next turn works."""
    script.add(
        *[mock.api_error(400, "the mock refuses this request")] * 6,
        mock.text("Fine now", {"input": 3, "output": 1}),
    )
    with trio.fail_after(120):
        async with codex_worker(tmp_path, server) as handle:
            failed = await run_turn(handle, "turn-1", "hello")
            script.replies[:] = [mock.text("Fine now", {"input": 3, "output": 1})]
            again = await run_turn(handle, "turn-2", "hello again")
    assert final(failed).kind == "failed"
    assert "the mock refuses this request" in (final(failed).text or "")
    assert_completed(again)


async def test_remembered_approval_is_not_asked_again(
    codex: str, tmp_path: Path, server: SseServer, script: mock.OpenAIScript
) -> None:
    """Allowed with `remember`, Codex's offered "always" decision (here the exec-policy
    amendment) is chosen: the same command in the next turn runs without asking."""
    script.add(
        mock.function_call("exec_command", TOUCH, {"input": 10, "output": 2}),
        mock.text("Done once.", {"input": 11, "output": 2}),
        mock.function_call("exec_command", TOUCH, {"input": 12, "output": 2}),
        mock.text("Done twice.", {"input": 13, "output": 2}),
    )
    with trio.fail_after(120):
        async with codex_worker(tmp_path, server) as handle:
            first = await run_turn(handle, "turn-1", "make approved.txt", allow(remember=True))
            second = await run_turn(handle, "turn-2", "again", deny())
    assert_completed(first, second)
    (asked,) = of_type(first, "approval_request", "item.started")
    assert asked["canRemember"] is True
    assert of_type(second, "approval_request") == []
    (command,) = of_type(second, "command")
    assert command["exitCode"] == 0
