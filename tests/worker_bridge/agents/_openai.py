"""A mock OpenAI Responses API (`POST /v1/responses`, SSE), from the public streaming format.

Each request takes the next scripted reply; the usage figures are fixed per reply so a test
can compare them with what the adapter reports. A `function_call` reply asks Codex to run a
tool (`exec_command` with `{"cmd": …}` runs a command).
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from ._sse_server import Recorded, Reply, Script

_ids = itertools.count(1)


def _usage(usage: dict[str, int]) -> dict[str, Any]:
    return {
        "input_tokens": usage["input"],
        "input_tokens_details": {"cached_tokens": usage.get("cached", 0)},
        "output_tokens": usage["output"],
        "output_tokens_details": {"reasoning_tokens": usage.get("reasoning", 0)},
        "total_tokens": usage["input"] + usage["output"],
    }


def _response(status: str, output: list[Any], usage: dict[str, int] | None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": f"resp_mock{next(_ids)}",
        "object": "response",
        "status": status,
        "model": "gpt-mock",
        "output": output,
    }
    if usage is not None:
        body["usage"] = _usage(usage)
    return body


def _item_events(index: int, item: dict[str, Any], deltas: list[str]) -> list[Any]:
    started = {**item, "status": "in_progress"}
    if item["type"] == "message":
        started["content"] = []
    events: list[Any] = [
        (
            "response.output_item.added",
            {"type": "response.output_item.added", "output_index": index, "item": started},
        )
    ]
    for delta in deltas:
        events.append(
            (
                "response.output_text.delta",
                {
                    "type": "response.output_text.delta",
                    "item_id": item["id"],
                    "output_index": index,
                    "content_index": 0,
                    "delta": delta,
                },
            )
        )
    events.append(
        (
            "response.output_item.done",
            {"type": "response.output_item.done", "output_index": index, "item": item},
        )
    )
    return events


def _reply(items: list[tuple[dict[str, Any], list[str]]], usage: dict[str, int]) -> Reply:
    events: list[Any] = [
        (
            "response.created",
            {"type": "response.created", "response": _response("in_progress", [], None)},
        )
    ]
    for index, (item, deltas) in enumerate(items):
        events += _item_events(index, item, deltas)
    done = _response("completed", [item for item, _ in items], usage)
    events.append(("response.completed", {"type": "response.completed", "response": done}))
    return Reply(tuple(events))


def _message(words: str) -> tuple[dict[str, Any], list[str]]:
    item = {
        "type": "message",
        "id": f"msg_mock{next(_ids)}",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": words, "annotations": []}],
    }
    halves = [words[: len(words) // 2], words[len(words) // 2 :]]
    return item, [h for h in halves if h]


def text(words: str, usage: dict[str, int]) -> Reply:
    """An assistant message streamed in two deltas."""
    return _reply([_message(words)], usage)


def function_call(name: str, arguments: dict[str, Any], usage: dict[str, int]) -> Reply:
    """A call of tool `name` (e.g. `exec_command` with `{"cmd": "…"}`)."""
    item = {
        "type": "function_call",
        "id": f"fc_mock{next(_ids)}",
        "call_id": f"call_mock{next(_ids)}",
        "name": name,
        "arguments": json.dumps(arguments),
        "status": "completed",
    }
    return _reply([(item, [])], usage)


def hanging(words: str, hold_s: float = 60.0) -> Reply:
    """The start of a message, then the stream stays open (to interrupt)."""
    item, _ = _message(words)
    events: list[Any] = [
        (
            "response.created",
            {"type": "response.created", "response": _response("in_progress", [], None)},
        )
    ]
    events += _item_events(0, item, [words])[:2]
    return Reply(tuple(events), hold_s=hold_s)


def api_error(status: int, message: str) -> Reply:
    return Reply(
        status=status,
        body={
            "error": {"message": message, "type": "invalid_request_error", "code": "mock_refusal"}
        },
    )


class OpenAIScript(Script):
    """The route: each `POST /v1/responses` takes the next scripted reply."""

    def __call__(self, request: Recorded) -> Reply:
        if request.method != "POST" or not request.path.startswith("/v1/responses"):
            return Reply(status=404, body={"error": {"message": f"no route {request.path}"}})
        return self.take(request, api_error(400, "the mock's script is exhausted"))
