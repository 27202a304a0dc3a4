"""A misbehaving harness for the failure tests (the real CLIs cannot be made to misbehave).

Speaks just enough of Claude Code's stream-json (`FAKE_PROTOCOL=claude`), Codex's
app-server JSON-RPC (`codex`) or ACP (`acp`) to start, then on the first prompt does what
`FAKE_MODE` says: `garbage` (a line that is not JSON), `exit` (a stderr line, then status
3), `hang` (nothing at all), `deaf` (nothing, and no reading: an interrupt goes unheard),
`huge` (a line over the adapter's 32 MiB bound, then a normal answer), `unknown` (an
unknown event type, then a normal answer).
"""

from __future__ import annotations

import json
import os
import sys
import time

MODE = os.environ.get("FAKE_MODE", "garbage")
PROTOCOL = os.environ.get("FAKE_PROTOCOL", "claude")
if os.environ.get("FAKE_PID_FILE"):  # one line per harness process started
    with open(os.environ["FAKE_PID_FILE"], "a") as pids:
        pids.write(f"{os.getpid()}\n")


def say(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def misbehave() -> None:
    if MODE == "garbage":
        sys.stdout.write("this is not json\n")
        sys.stdout.flush()
    elif MODE == "exit":
        sys.stderr.write("fatal: the model exploded\n")
        sys.stderr.flush()
        sys.exit(3)
    elif MODE in ("hang", "deaf"):
        time.sleep(3600)
    elif MODE == "huge":
        sys.stdout.write('{"pad": "' + "x" * (32 * 1024 * 1024) + '"}\n')
        sys.stdout.flush()


def claude(message: dict[str, object]) -> None:
    if message.get("type") == "control_request":
        say(
            {
                "type": "control_response",
                "response": {
                    "subtype": "success",
                    "request_id": message["request_id"],
                    "response": {},
                },
            }
        )
    elif message.get("type") == "user":
        misbehave()
        say({"type": "mystery_event", "payload": 1})
        say(
            {
                "type": "assistant",
                "message": {"id": "m1", "content": [{"type": "text", "text": "fine"}]},
            }
        )
        say(
            {
                "type": "result",
                "subtype": "success",
                "is_error": False,
                "session_id": "s1",
                "usage": {},
                "modelUsage": {},
                "total_cost_usd": 0,
            }
        )


def codex(message: dict[str, object]) -> None:
    method, ident = message.get("method"), message.get("id")
    if method == "initialize":
        say({"id": ident, "result": {}})
    elif method in ("thread/start", "thread/resume"):
        say({"id": ident, "result": {"thread": {"id": "thread-1"}}})
    elif method == "turn/start":
        say({"id": ident, "result": {"turn": {"id": "t1"}}})
        misbehave()
        say({"method": "mystery/notification", "params": {}})
        say(
            {
                "method": "item/completed",
                "params": {"item": {"type": "agentMessage", "id": "a", "text": "fine"}},
            }
        )
        say({"method": "turn/completed", "params": {"turn": {"id": "t1", "status": "completed"}}})


def acp(message: dict[str, object]) -> None:
    method, ident = message.get("method"), message.get("id")
    if method == "initialize":
        say({"jsonrpc": "2.0", "id": ident, "result": {"protocolVersion": 1}})
    elif method == "session/new":
        say({"jsonrpc": "2.0", "id": ident, "result": {"sessionId": "session-1"}})
    elif method == "session/prompt":
        misbehave()
        update = {"sessionId": "session-1", "update": {"sessionUpdate": "mystery_update"}}
        say({"jsonrpc": "2.0", "method": "session/update", "params": update})
        chunk = {
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": "fine"},
        }
        say({"jsonrpc": "2.0", "method": "session/update",
             "params": {"sessionId": "session-1", "update": chunk}})  # fmt: skip
        say({"jsonrpc": "2.0", "id": ident, "result": {"stopReason": "end_turn"}})


SPEAK = {"claude": claude, "codex": codex, "acp": acp}
for line in sys.stdin:
    SPEAK[PROTOCOL](json.loads(line))
