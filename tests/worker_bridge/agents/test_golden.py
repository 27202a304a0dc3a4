"""Golden transcripts per pinned CLI version: the envelope and event order the real binary
prints for one scenario, and the items Maia makes of it. A new CLI version fails here until
its transcript is recorded (`MAIA_RECORD_GOLDEN=1`) and the difference reviewed."""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio

from supervision.workers import TurnEvent
from worker_bridge.workers.agents import probe

from . import _anthropic as claude_mock
from . import _openai as codex_mock
from ._drive import allow, need_claude, need_codex, run_turn, spec, started_worker, work_dir
from ._sse_server import Route, SseServer, serve
from ._support import claude_env, codex_env

EnvFor = Callable[[Path, SseServer], dict[str, str]]
GOLDEN = Path(__file__).with_name("golden")
# Lines whose place is concurrent with others (our requests' answers, the end of a model
# stream against the tool call it started, a permission request against the rest of its
# model message): in the set of shapes seen, not in the order.
RACY = {"response", "stream_event:message_stop", "control_request:can_use_tool"}
# Lines whose number depends on timing (progress estimates), left out of the order.
TIMING = {
    "system:thinking_tokens",
    "system:status",
    "account/rateLimits/updated",
    "thread/status/changed",
    "warning",
}


def claude_shape(line: dict[str, Any]) -> str:
    kind = line.get("type")
    if kind == "stream_event":
        return f"stream_event:{line['event']['type']}"
    if kind == "system":
        return f"system:{line.get('subtype')}"
    if kind in ("control_request", "control_response"):
        body = line.get("request") or line.get("response") or {}
        return f"{kind}:{body.get('subtype')}"
    if kind in ("assistant", "user"):
        content = line["message"]["content"]
        types = [c.get("type") for c in content] if isinstance(content, list) else ["text"]
        return f"{kind}:{','.join(types)}"
    if kind == "result":
        return f"result:{line.get('subtype')}:{line.get('terminal_reason')}"
    return str(kind)


def codex_shape(line: dict[str, Any]) -> str:
    if "method" in line:
        item = (line.get("params") or {}).get("item")
        suffix = f":{item.get('type')}" if isinstance(item, dict) else ""
        return f"{'request' if 'id' in line else 'notify'}:{line['method']}{suffix}"
    return "response" if "result" in line else "error"


def collapse(shapes: list[str]) -> list[str]:
    """Consecutive repeats folded (the number of deltas depends on chunking)."""
    out: list[str] = []
    for shape in shapes:
        if shape not in TIMING | RACY and (not out or out[-1] != shape):
            out.append(shape)
    return out


def maia_shape(events: list[TurnEvent]) -> list[str]:
    shapes = []
    for event in events:
        item = (event.data or {}).get("item")
        shapes.append(f"{event.kind}:{item['type']}" if isinstance(item, dict) else event.kind)
    return collapse(shapes)


def check(name: str, found: dict[str, Any]) -> None:
    path = GOLDEN / f"{name}.json"
    if os.environ.get("MAIA_RECORD_GOLDEN") == "1":
        path.write_text(json.dumps(found, indent=1) + "\n")
    if not path.exists():
        pytest.fail(f"no golden transcript {path.name}: record it with MAIA_RECORD_GOLDEN=1")
    expected = json.loads(path.read_text())
    if found != expected:  # a readable diff: the assertion's own is cut inside a task group
        diff = difflib.unified_diff(
            json.dumps(expected, indent=1).splitlines(),
            json.dumps(found, indent=1).splitlines(),
            "golden",
            "found",
            lineterm="",
        )
        pytest.fail(f"{path.name} differs: review, then re-record\n" + "\n".join(diff))


async def record(
    tmp_path: Path, module: str, env: EnvFor, script: Route, shape: Callable[[Any], str]
) -> dict[str, Any]:
    """A text turn and an approved command turn against `script`: the harness's transcript
    lines (in order, and the set seen) and Maia's events, as shapes."""
    transcript = tmp_path / "transcript.jsonl"
    with serve(script) as server, trio.fail_after(120):
        options = {"transcriptPath": str(transcript)}
        worker = spec(module, work_dir(tmp_path), env(tmp_path, server), options)
        async with started_worker(worker) as handle:
            first = await run_turn(handle, "turn-1", "hello")
            second = await run_turn(handle, "turn-2", "make a file", allow())
    lines = [json.loads(line) for line in transcript.read_text().splitlines()]
    return {
        "harness": collapse([shape(line) for line in lines]),
        "seen": sorted({shape(line) for line in lines}),
        "maia": [maia_shape(first), maia_shape(second)],
    }


async def test_claude_code_golden_transcript(tmp_path: Path) -> None:
    """Claude Code's lines for a text turn and an approved Bash turn match the golden file."""
    need_claude()
    version = probe("claude-code", {}).version
    script = claude_mock.AnthropicScript(
        claude_mock.text("Hello", {"input": 10, "output": 2}, thinking="hmm"),
        claude_mock.tool_use("Bash", {"command": "touch approved.txt"}, {"input": 20, "output": 3}),
        claude_mock.text("Done", {"input": 30, "output": 4}),
    )
    found = await record(tmp_path, "claude_code", claude_env, script, claude_shape)
    check(f"claude-code-{version}", found)


async def test_codex_golden_transcript(tmp_path: Path) -> None:
    """Codex app-server's messages for a text turn and an approved command turn match."""
    need_codex()
    version = probe("codex", {}).version
    script = codex_mock.OpenAIScript(
        codex_mock.text("Hello", {"input": 10, "output": 2}),
        codex_mock.function_call(
            "exec_command", {"cmd": "touch approved.txt"}, {"input": 20, "output": 3}
        ),
        codex_mock.text("Done", {"input": 30, "output": 4}),
    )
    found = await record(tmp_path, "codex", codex_env, script, codex_shape)
    check(f"codex-{version}", found)
