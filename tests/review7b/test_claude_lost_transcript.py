"""Review (s7-review2): a stale resume id through a real Node, the CLI and the real Claude
Code binary (docs/agents.md "Conversations and restarts"; HARNESSES.md: an unknown id fails,
fall back to a fresh conversation and say so): the worker is killed between turns and the
conversation's transcript deleted; the next turn completes in a fresh conversation, carries
an `error` item saying the conversation was replaced, the Session records
`session.conversation.replaced`, and the turn after it stays in the new conversation."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

from tests.maia.agents._node import (
    agent_session,
    conversation_id,
    kill_worker,
    run,
    send,
    wait_turn,
)
from tests.worker_bridge.agents import _anthropic as mock
from tests.worker_bridge.agents._drive import need_claude
from tests.worker_bridge.agents._support import claude_env

PASSED = ["HOME", "NO_PROXY", "no_proxy", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_KEY"]
CONFIG = json.dumps({"executors": {"claude": {"kind": "claude-code", "env": PASSED}}})


def test_a_deleted_transcript_starts_a_fresh_conversation_and_says_so(tmp_path: Path) -> None:
    """Replaced, said in an error item and a Session event; the turns go on."""
    need_claude()
    script = mock.AnthropicScript(
        *[mock.text(words, {"input": 1, "output": 1}) for words in ("One", "Two", "Three")]
    )
    env_for = partial(claude_env, tmp_path, home="agent-home")
    with agent_session(tmp_path, CONFIG, env_for, script, "user:claude") as cli:
        assert wait_turn(cli, send(cli, "remember kumquat"))["turn"]["outputText"] == "One"
        old = conversation_id(cli)
        kill_worker(cli)
        transcripts = list((tmp_path / "agent-home" / ".claude").rglob(f"{old}.jsonl"))
        assert transcripts, "the conversation's transcript was not where Claude keeps it"
        for path in transcripts:
            path.unlink()
        second = wait_turn(cli, send(cli, "which word?"))
        assert second["turn"]["state"] == "completed", second["turn"]
        assert second["turn"]["outputText"] == "Two"
        errors = [i for i in second["items"] if i["kind"] == "error"]
        assert len(errors) == 1, second["items"]
        assert old in json.dumps(errors[0])
        new = conversation_id(cli)
        assert new != old
        events = run(cli, "events", "read", "--limit", "500")["events"]
        replaced = [e for e in events if e["eventType"] == "session.conversation.replaced"]
        assert len(replaced) == 1, [e["eventType"] for e in events]
        assert old in json.dumps(replaced[0])
        third = wait_turn(cli, send(cli, "and now?"))
        assert third["turn"]["outputText"] == "Three"
        assert [i for i in third["items"] if i["kind"] == "error"] == []
        assert conversation_id(cli) == new
        assert "which word?" in json.dumps(script.main[-1].body["messages"])
