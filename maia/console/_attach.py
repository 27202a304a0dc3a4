"""`attach REF`: follow one Session's output live until Ctrl-C.

The reference is resolved by the Node (`reference.resolve`: ID, prefix or title; ambiguous
shows the candidates). Following reads the Session's own events in owner order: first to
the end without printing (only the current position matters), then each new turn start,
finished item text and turn end as it is written. Interim: this reads the journal through
`events.read`; when the SDK serves `session.attach` on the observation socket, deltas
stream as they are produced and `follow_session` switches to it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio

from maia.protocol import MaiaError

from ._feed import DEFAULT_POLL_S, PAGE_LIMIT


async def resolve_session(client: Any, reference: str) -> str:
    """The Session ID `reference` names.

    Raises `MaiaError`: resource_not_found, or validation_failed listing the candidates
    when the reference is ambiguous.
    """
    answer = await client.request("reference.resolve", {"reference": reference})
    if answer["status"] == "resolved":
        return str(answer["id"])
    names = ", ".join(f"{c['id']} ({c.get('label') or 'untitled'})" for c in answer["candidates"])
    raise MaiaError(
        "validation_failed",
        f"reference {reference!r} is ambiguous: {names}",
        {"path": "reference", "candidates": answer["candidates"]},
    )


def render_session_event(event: dict[str, Any]) -> str | None:
    """The line `attach` prints for one of the Session's events (None: nothing to show)."""
    kind, payload = event["eventType"], event.get("payload") or {}
    turn = payload.get("turnId", "")
    if kind == "turn.started":
        return f"▶ turn {turn} started"
    if kind == "item.completed":
        return str(payload.get("text", ""))
    if kind in ("turn.completed", "turn.failed", "turn.interrupted"):
        reason = f" ({payload['reason']})" if payload.get("reason") else ""
        return f"■ turn {turn} {payload.get('state', kind.split('.')[1])}{reason}"
    if kind.startswith("session.") and "state" in payload:
        return f"· session {payload['state']}"
    return None


async def follow_session(
    client: Any, session_id: str, write: Callable[[str], None], *, poll_s: float = DEFAULT_POLL_S
) -> None:
    """Print the Session's new output with `write` until cancelled. Raises `MaiaError`."""
    after = 0
    live = False
    while True:
        position = {
            "kind": "sequence",
            "ownerType": "session",
            "ownerId": session_id,
            "afterSequence": after,
        }
        page = await client.request("events.read", {"position": position, "limit": PAGE_LIMIT})
        for event in page["events"]:
            after = max(after, int(event["ownerSequence"]))
            line = render_session_event(event) if live else None
            if line is not None:
                write(line + "\n")
        if not page["hasMore"]:
            live = True
            await anyio.sleep(poll_s)
