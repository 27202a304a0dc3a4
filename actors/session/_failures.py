"""Why a Session cannot run: its last launch failure, and a send's refusal that names the
real state.

A launch that fails before any worker process exists (the Session's cwd is gone, its
executor unknown or renamed) fails the turns waiting for it and leaves the Session idle:
the next send tries again once the cause is fixed. The reason is kept on the Session
(`failureMessage` in session.show) until a worker comes up. A send to a Session that takes
no more turns is refused with its state (stopping, stopped, failed, archived) and what to
do next.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping

from maia.core import MaiaError

from . import _sql as sql
from ._store import Draft

MAX_FAILURE_CHARS = 4096

# The failure codes a worker may give a turn it fails (`turn.failed`'s `data.code`); any
# other code, or none, is `turn_failed`. A worker never claims a Node's own reason
# (runtime_lost, worker_failed, wall_time_exceeded, ...).
WORKER_FAILURE_CODES = frozenset({"launch_failed"})  # the harness could not be started


def worker_failure_reason(data: Mapping[str, object] | None) -> str:
    """The failure reason of a turn its worker failed with `data`."""
    code = data.get("code") if data else None
    return code if isinstance(code, str) and code in WORKER_FAILURE_CODES else "turn_failed"


_NEXT = "create a new Session (maia session create) to go on"


def record_failure(conn: sqlite3.Connection, draft: Draft, reason: str | None) -> None:
    """Keep `reason` as the Session's failure (None clears it); no revision: not state."""
    text = None if reason is None else reason[:MAX_FAILURE_CHARS]
    sql.set_failure_message(conn, draft.session_id, text)
    if reason is not None:
        draft.session_changed = True


def closed_refusal(conn: sqlite3.Connection, draft: Draft) -> MaiaError:
    """The `invalid_state` refusal of a send to a Session that takes no more turns."""
    archived, failure = sql.archive_and_failure(conn, draft.session_id)
    state = "archived" if archived else draft.state.value
    if archived:
        why = "the Session is archived: it takes no more turns"
    elif state == "failed":
        cause = f" ({failure})" if failure else ""
        why = f"the Session failed{cause}: it takes no more turns"
    elif state == "stopping":
        why = "the Session is stopping: it takes no more turns"
    else:
        why = f"the Session is {state}: it takes no more turns"
    details: dict[str, object] = {"resource": "session", "id": draft.session_id, "state": state}
    return MaiaError("invalid_state", f"{why}; {_NEXT}", details)
