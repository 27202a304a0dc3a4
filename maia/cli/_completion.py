"""`maia completion bash|zsh|fish`, and the dynamic completion of Session references.

The scripts are click's own shell completion for the `maia` program (`_MAIA_COMPLETE`).
A Session reference (a positional SESSION, `--session-id`) completes from the running
Node's Sessions (IDs and titles), under a short deadline and silently: no Node, a slow Node
or any error completes nothing rather than printing into the user's shell.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import click
from click.shell_completion import CompletionItem, get_completion_class

SHELLS: Final = ("bash", "zsh", "fish")
COMPLETE_VAR: Final = "_MAIA_COMPLETE"
DEADLINE_S: Final = 1.5
LIST_LIMIT: Final = 100


def completion_script(args: Sequence[str]) -> str:
    """The completion script for the shell named in `args`. Raises click.UsageError."""
    if len(args) != 1 or args[0] not in SHELLS:
        raise click.UsageError("usage: maia completion bash|zsh|fish")
    from ._invocation import command_tree

    cls = get_completion_class(args[0])
    assert cls is not None
    completer = cls(command_tree(), {}, "maia", COMPLETE_VAR)
    return completer.source() + "\n"


def session_candidates(incomplete: str) -> list[tuple[str, str | None]]:
    """(value, help) pairs of live Sessions whose ID or title starts with `incomplete`;
    empty on any failure or when the Node does not answer within the deadline."""
    import anyio

    async def fetch() -> list[tuple[str, str | None]]:
        from maia.client import open_client

        with anyio.move_on_after(DEADLINE_S):
            async with open_client(timeout_s=DEADLINE_S) as client:
                page = await client.request("session.list", {"limit": LIST_LIMIT})
                return matches(page.get("sessions", []), incomplete)
        return []

    try:
        return anyio.run(fetch)
    except Exception:  # completion must never break the shell: silent on any failure
        return []


def matches(sessions: list[dict[str, Any]], incomplete: str) -> list[tuple[str, str | None]]:
    """Sessions whose ID or title starts with `incomplete` (titles match case-insensitively)."""
    out: list[tuple[str, str | None]] = []
    low = incomplete.lower()
    for session in sessions:
        title = session.get("title")
        if session["sessionId"].startswith(incomplete):
            out.append((session["sessionId"], title))
        elif title and title.lower().startswith(low):
            out.append((title, session["sessionId"]))
    return out


def complete_session(
    _ctx: click.Context, _param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    """click's `shell_complete` hook for Session references."""
    return [CompletionItem(value, help=note) for value, note in session_candidates(incomplete)]
