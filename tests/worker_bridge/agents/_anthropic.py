"""A mock Anthropic Messages API (`POST /v1/messages`, SSE), from the public streaming format.

Replies come from a script, one per main-loop request (a request that offers tools); any
other request (a side call the CLI makes with a small model) gets a short text. Usage
figures are fixed per reply so a test can compare them with what the adapter reports.
"""

from __future__ import annotations

import itertools
from typing import Any

from ._sse_server import Recorded, Reply, Script

_ids = itertools.count(1)


def _start(usage: dict[str, int], model: str) -> tuple[str, dict[str, Any]]:
    message: dict[str, Any] = {
        "id": f"msg_mock{next(_ids)}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {
            "input_tokens": usage["input"],
            "output_tokens": 1,
            "cache_creation_input_tokens": usage.get("cache_write", 0),
            "cache_read_input_tokens": usage.get("cache_read", 0),
        },
    }
    return "message_start", {"type": "message_start", "message": message}


def _end(stop: str, usage: dict[str, int]) -> list[tuple[str, dict[str, Any]]]:
    return [
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": usage["output"]},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]


def _block(index: int, block: dict[str, Any], deltas: list[dict[str, Any]]) -> list[Any]:
    events: list[Any] = [
        (
            "content_block_start",
            {"type": "content_block_start", "index": index, "content_block": block},
        )
    ]
    for delta in deltas:
        events.append(
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
        )
    events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    return events


def text(
    words: str, usage: dict[str, int], *, thinking: str | None = None, model: str = "claude-mock"
) -> Reply:
    """A reply of one text block (after an optional thinking block), stop reason end_turn."""
    events: list[Any] = [_start(usage, model)]
    index = 0
    if thinking is not None:
        events += _block(
            0,
            {"type": "thinking", "thinking": "", "signature": ""},
            [
                {"type": "thinking_delta", "thinking": thinking},
                {"type": "signature_delta", "signature": "c2lnbmF0dXJl"},
            ],
        )
        index = 1
    halves = [words[: len(words) // 2], words[len(words) // 2 :]]
    events += _block(
        index,
        {"type": "text", "text": ""},
        [{"type": "text_delta", "text": h} for h in halves if h],
    )
    return Reply(tuple(events + _end("end_turn", usage)))


def tool_use(
    name: str,
    arguments: dict[str, Any],
    usage: dict[str, int],
    *,
    tool_id: str | None = None,
    model: str = "claude-mock",
) -> Reply:
    """A reply that asks the CLI to run tool `name` with `arguments` (stop reason tool_use)."""
    import json

    block = {
        "type": "tool_use",
        "id": tool_id or f"toolu_mock{next(_ids)}",
        "name": name,
        "input": {},
    }
    partial = json.dumps(arguments)
    events = [_start(usage, model)]
    events += _block(0, block, [{"type": "input_json_delta", "partial_json": partial}])
    return Reply(tuple(events + _end("tool_use", usage)))


def hanging(words: str, usage: dict[str, int], hold_s: float = 60.0) -> Reply:
    """A reply that streams the start of a text block, then stays open (to interrupt)."""
    events = [_start(usage, "claude-mock")]
    events.append(
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        )
    )
    events.append(
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": words},
            },
        )
    )
    return Reply(tuple(events), hold_s=hold_s)


def api_error(status: int, message: str) -> Reply:
    """An error answer; 400 is `invalid_request_error`, which the CLI does not retry."""
    kind = "invalid_request_error" if status == 400 else "api_error"
    return Reply(status=status, body={"type": "error", "error": {"type": kind, "message": message}})


class AnthropicScript(Script):
    """The route: main-loop requests take the next scripted reply; side calls a short text."""

    def __call__(self, request: Recorded) -> Reply:
        if request.method != "POST" or not request.path.startswith("/v1/messages"):
            return Reply(
                status=404,
                body={
                    "type": "error",
                    "error": {"type": "not_found_error", "message": request.path},
                },
            )
        if request.path.startswith("/v1/messages/count_tokens"):
            return Reply(body={"input_tokens": 10})
        body = request.body if isinstance(request.body, dict) else {}
        if not body.get("tools"):
            return text("ok", {"input": 1, "output": 1})
        return self.take(request, api_error(500, "the mock's script is exhausted"))
