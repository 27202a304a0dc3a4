"""A test ACP agent built on the `agent-client-protocol` package (run as a script).

It stands in for `gemini --acp`, `goose acp` and the like. Per prompt it streams a thought
and the reply `echo #N: <prompt>` in three chunks (N counts the Session's prompts, so a
test sees memory), and reports usage. `/permission` asks to run `touch approved.txt` in
the Session's directory (a `session/request_permission` with allow/always/reject) and runs
it only if allowed; `/crash` exits 3 mid-prompt; `/slow` streams a chunk every 50 ms until
cancelled (stop reason `cancelled`). Sessions are kept in `$ACP_TEST_STATE` so a new
process can `session/load`.
With `$ACP_TEST_COST_USD` each prompt adds that much to the session's cost, reported as a
`usage_update` with the running total (also when a load replays the history).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import uuid
from pathlib import Path
from typing import Any, cast

from acp import (
    PROTOCOL_VERSION,
    Agent,
    InitializeResponse,
    LoadSessionResponse,
    NewSessionResponse,
    PromptResponse,
    RequestError,
    run_agent,
    start_tool_call,
    text_block,
    tool_content,
    update_agent_message_text,
    update_agent_thought_text,
    update_tool_call,
)
from acp.interfaces import Client
from acp.schema import AgentCapabilities, Cost, PermissionOption, Usage, UsageUpdate

STATE = Path(os.environ.get("ACP_TEST_STATE", "acp-test-state.json"))
COST_USD = float(os.environ.get("ACP_TEST_COST_USD", "0"))


def _load() -> dict[str, Any]:
    return json.loads(STATE.read_text()) if STATE.exists() else {}


def _save(sessions: dict[str, Any]) -> None:
    STATE.write_text(json.dumps(sessions))


class TestAgent:
    def __init__(self) -> None:
        self.conn: Client | None = None
        self.sessions = _load()
        self.cancelled: dict[str, asyncio.Event] = {}

    def on_connect(self, conn: Client) -> None:
        self.conn = conn

    async def initialize(
        self,
        protocol_version: int,
        client_capabilities: Any = None,
        client_info: Any = None,
        **kwargs: Any,
    ) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION,
            agent_capabilities=AgentCapabilities(load_session=True),
        )

    async def new_session(
        self, cwd: str, mcp_servers: Any = None, **kwargs: Any
    ) -> NewSessionResponse:
        session_id = f"acp-{uuid.uuid4()}"
        self.sessions[session_id] = {"cwd": cwd, "prompts": []}
        _save(self.sessions)
        return NewSessionResponse(session_id=session_id)

    async def load_session(
        self, cwd: str, session_id: str, mcp_servers: Any = None, **kwargs: Any
    ) -> LoadSessionResponse:
        if session_id not in self.sessions:
            raise RequestError.resource_not_found(session_id)
        assert self.conn is not None
        for prompt in self.sessions[session_id]["prompts"]:  # replay, as the protocol says
            await self.conn.session_update(
                session_id, update_agent_message_text(f"(replay) {prompt}")
            )
        await self._report_cost(session_id)
        return LoadSessionResponse()

    async def _report_cost(self, session_id: str) -> None:
        """The session's running cost, when the agent is configured to have one."""
        if not COST_USD:
            return
        assert self.conn is not None
        total = COST_USD * len(self.sessions[session_id]["prompts"])
        cost = Cost(amount=total, currency="USD")
        update = UsageUpdate(session_update="usage_update", used=100, size=1000, cost=cost)
        await self.conn.session_update(session_id, update)

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
        assert self.conn is not None
        session = self.sessions[session_id]
        text = "".join(getattr(block, "text", "") for block in prompt)
        session["prompts"].append(text)
        _save(self.sessions)
        cancelled = self.cancelled.setdefault(session_id, asyncio.Event())
        cancelled.clear()
        await self.conn.session_update(session_id, update_agent_thought_text("considering"))
        if text.startswith("/crash"):  # dies mid-prompt, as an agent that crashes
            await self.conn.session_update(session_id, update_agent_message_text("about to"))
            os._exit(3)
        if text.startswith("/permission"):
            return await self._permission(session_id, session["cwd"])
        if text.startswith("/slow"):
            while not cancelled.is_set():
                await self.conn.session_update(session_id, update_agent_message_text("tick "))
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(cancelled.wait(), 0.05)
            return PromptResponse(stop_reason="cancelled")
        reply = f"echo #{len(session['prompts'])}: {text}"
        for start in range(0, len(reply), max(1, len(reply) // 3 + 1)):
            chunk = reply[start : start + len(reply) // 3 + 1]
            await self.conn.session_update(session_id, update_agent_message_text(chunk))
        await self._report_cost(session_id)
        usage = Usage(total_tokens=15, input_tokens=11, output_tokens=4)
        return PromptResponse(stop_reason="end_turn", usage=usage)

    async def _permission(self, session_id: str, cwd: str) -> PromptResponse:
        assert self.conn is not None
        call = start_tool_call(
            "call-1",
            "touch approved.txt",
            kind="execute",
            status="pending",
            raw_input={"command": "touch approved.txt"},
        )
        await self.conn.session_update(session_id, call)
        options = [
            PermissionOption(option_id="allow", name="Allow", kind="allow_once"),
            PermissionOption(option_id="always", name="Always allow", kind="allow_always"),
            PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
        ]
        answer = await self.conn.request_permission(
            session_id=session_id,
            options=options,
            tool_call=update_tool_call("call-1", title="touch approved.txt", kind="execute"),
        )
        outcome = answer.outcome
        chosen = getattr(outcome, "option_id", None)
        if chosen in ("allow", "always"):
            await asyncio.to_thread(Path(cwd, "approved.txt").touch)
            done = update_tool_call(
                "call-1",
                status="completed",
                content=[tool_content(text_block("ok"))],
            )
            await self.conn.session_update(session_id, done)
            await self.conn.session_update(
                session_id, update_agent_message_text(f"ran it ({chosen})")
            )
        else:
            await self.conn.session_update(session_id, update_tool_call("call-1", status="failed"))
            await self.conn.session_update(session_id, update_agent_message_text("did not run it"))
        return PromptResponse(stop_reason="end_turn")

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        self.cancelled.setdefault(session_id, asyncio.Event()).set()


if __name__ == "__main__":
    asyncio.run(run_agent(cast(Agent, TestAgent())))
