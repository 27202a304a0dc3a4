"""Helpers shared by the end-to-end tests that drive Sessions through a real Node's SDK."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio


async def new_session(client: Any, root: Path, key: str) -> str:
    """A Session of the `user:echo` executor in a Project at `root` (created if missing)."""
    await trio.Path(root).mkdir(exist_ok=True)
    project = await client.call("project.add", command_id=f"p-{key}", root_path=str(root))
    created = await client.call(
        "session.create",
        command_id=key,
        project_id=project.project.project_id,
        executor="user:echo",
    )
    return str(created.session.session_id)


async def wait_turn(client: Any, turn_id: str, *states: str) -> Any:
    """The turn once it is in one of `states`, repeating the bounded turn.wait (60 s at most)."""
    with trio.fail_after(60):
        while True:
            out = await client.call("turn.wait", turn_id=turn_id, states=tuple(states))
            if out.satisfied:
                return out.turn
