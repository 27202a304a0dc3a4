"""`maia observe events`: follow the observation stream (`observe.events`).

The op is served on the observation socket, not on `/api/v1`, so the command rides on the
SDK's `observe_events` (hello, subscribe, resume after a dropped connection) the way
`session attach` rides on `attach_session`. It follows until Ctrl-C (exit 130) or
`--timeout` (exit 0); `--jsonl` prints every frame as one line, human text a line per
record (and on stderr a note when the cursor was reset or records were lost). Either way it
ends by saying on stderr the cursor to continue from (`--cursor`), the last one a frame
carried, so every record before it has been printed.
"""

from __future__ import annotations

import json
from typing import Any

import anyio


def _record_line(record: dict[str, Any]) -> str:
    owner = f"{record.get('ownerType') or '-'} {record.get('ownerId') or '-'}"
    when = record.get("observedAt") or record.get("occurredAt") or "-"
    return f"{when}  {record.get('eventType', '-')}  {owner}\n"


def _frame_note(frame: dict[str, Any]) -> str | None:
    """What a person must be told of a frame that is not records: the cursor was reset
    (what follows is a fresh snapshot, not a continuation), or records were lost."""
    if frame.get("type") == "reset":
        error = frame.get("error") or {}
        reason = (error.get("details") or {}).get("reason") or error.get("message", "")
        code = error.get("code", "cursor_reset_required")
        return f"{code}: {reason}; what follows starts again from a snapshot"
    if frame.get("type") == "gap":
        lost = frame.get("droppedRecordCount", 0) + frame.get("coalescedRecordCount", 0)
        return f"fell behind ({frame.get('reason', 'gap')}): {lost} records not printed"
    return None


def _print(frame: dict[str, Any], out: Any) -> None:
    if out.fmt != "human":
        out.data(json.dumps(frame, ensure_ascii=False, sort_keys=True) + "\n")
        return
    note = _frame_note(frame)
    if note is not None:
        out.message(note)
    for record in frame.get("records") or ():
        out.data(_record_line(record))


async def observe(client: Any, params: dict[str, Any], timeout_s: float | None, out: Any) -> int:
    """Follow the stream until the timeout; the exit code (0).

    Raises MaiaError when the Node refuses the query or the cursor, or the stream cannot be
    opened (`unavailable`).
    """
    from maia.client import observe_events

    from . import _exit

    cursor: str | None = None  # the last cursor a frame carried
    try:
        with anyio.move_on_after(timeout_s if timeout_s is not None else float("inf")):
            async with observe_events(client, params.get("query"),
                                      cursor=params.get("cursor")) as feed:  # fmt: skip
                gaps = 0  # the SDK resumes after a gap itself and keeps the frame aside
                async for frame in feed:
                    cursor = frame.frame.get("cursor") or cursor
                    for shown in [*feed.gaps[gaps:], frame.frame]:
                        _print(shown, out)
                    gaps = len(feed.gaps)
    finally:
        if cursor is not None:
            out.message(f"stopped; continue with --cursor {cursor}")
    return _exit.OK
