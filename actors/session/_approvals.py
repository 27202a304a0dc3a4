"""Approval records: a worker's `maia.approval` tool call as a durable row of its Session.

An approval is `pending` until a person answers it (`allowed`, `denied`), the turn that asked
ends or its worker dies (`withdrawn`: the harness can no longer act on an answer), or its
optional deadline passes (`expired`, only with `sessions.approvalTimeoutMs` configured: the default
is none, and an approval never turns into a silent deny). Every change emits an event owned
by the Session, in the transaction of the change. All of the kind's approval SQL lives here.
"""

from __future__ import annotations

import sqlite3
from typing import Any, Final

import orjson

from maia.core import MaiaError, format_timestamp_ms

from ._store import Draft, emit

MAX_SUMMARY_BYTES: Final = 8192
MAX_OPTIONS: Final = 8
APPROVAL_TOOL: Final = "maia.approval"
_COLUMNS: Final = (
    "approval_id, session_id, turn_id, kind, summary, options, can_remember, state, remember,"
    " message, revision, created_ms, expires_ms, resolved_ms"
)


def _bounded(text: str, limit: int) -> str:
    data = text.encode("utf-8")
    return text if len(data) <= limit else data[:limit].decode("utf-8", "ignore")


def request_fields(arguments: dict[str, Any]) -> tuple[str, str, list[str], bool]:
    """The kind, summary, options and canRemember of a tool call's arguments, bounded."""
    kind = arguments.get("kind")
    summary = arguments.get("summary")
    options = arguments.get("options")
    kind = kind[:64] if isinstance(kind, str) and kind else "tool"
    text = _bounded(summary, MAX_SUMMARY_BYTES) if isinstance(summary, str) else ""
    chosen = [o[:64] for o in options if isinstance(o, str)] if isinstance(options, list) else []
    return (
        kind,
        text,
        (chosen or ["allow", "deny"])[:MAX_OPTIONS],
        arguments.get("canRemember") is True,
    )


def insert_approval(conn: sqlite3.Connection, draft: Draft, *, approval_id: str, turn_id: str,
                    call_id: str, arguments: dict[str, Any],
                    expires_ms: int | None) -> None:  # fmt: skip
    kind, summary, options, can_remember = request_fields(arguments)
    conn.execute(
        f"INSERT INTO approvals ({_COLUMNS}, call_id) VALUES"
        " (?, ?, ?, ?, ?, ?, ?, 'pending', NULL, NULL, 1, ?, ?, NULL, ?)",
        (approval_id, draft.session_id, turn_id, kind, summary, orjson.dumps(options).decode(),
         int(can_remember), draft.now, expires_ms, call_id),
    )  # fmt: skip
    emit(conn, draft, "approval.requested",
         {"approvalId": approval_id, "turnId": turn_id, "kind": kind,
          "summary": summary[:200]})  # fmt: skip


def not_pending(approval_id: str, state: str) -> MaiaError:
    return MaiaError(
        "approval_not_pending",
        f"approval {approval_id} is {state}: only a pending approval can be answered",
        {"approvalId": approval_id, "state": state},
    )


def missing(approval_id: str) -> MaiaError:
    return MaiaError("resource_not_found", f"approval {approval_id} does not exist",
                     {"resource": "approval", "id": approval_id})  # fmt: skip


def resolve(conn: sqlite3.Connection, draft: Draft, approval_id: str, state: str,
            *, remember: bool = False, message: str | None = None) -> str:  # fmt: skip
    """Move a pending approval to `state`; returns its turn. Raises `approval_not_pending`
    (answered, withdrawn or expired) and `resource_not_found` (not this Session's)."""
    row = conn.execute(
        "SELECT state, turn_id FROM approvals WHERE approval_id = ? AND session_id = ?",
        (approval_id, draft.session_id),
    ).fetchone()
    if row is None:
        raise missing(approval_id)
    if row[0] != "pending":
        raise not_pending(approval_id, row[0])
    conn.execute(
        "UPDATE approvals SET state = ?, remember = ?, message = ?, resolved_ms = ?,"
        " revision = revision + 1 WHERE approval_id = ? AND state = 'pending'",
        (state, int(remember), message, draft.now, approval_id),
    )
    emit(conn, draft, f"approval.{state}", {"approvalId": approval_id, "turnId": row[1]})
    return str(row[1])


def withdraw_pending(conn: sqlite3.Connection, draft: Draft, reason: str,
                     turn_id: str | None = None) -> list[str]:  # fmt: skip
    """Withdraw the Session's pending approvals (of `turn_id` only, when given)."""
    sql = "SELECT approval_id, turn_id FROM approvals WHERE session_id = ? AND state = 'pending'"
    args: tuple[Any, ...] = (draft.session_id,)
    if turn_id is not None:
        sql, args = sql + " AND turn_id = ?", (*args, turn_id)
    rows = conn.execute(sql, args).fetchall()
    for approval_id, turn in rows:
        conn.execute(
            "UPDATE approvals SET state = 'withdrawn', message = ?, resolved_ms = ?,"
            " revision = revision + 1 WHERE approval_id = ?",
            (reason[:200], draft.now, approval_id),
        )
        emit(conn, draft, "approval.withdrawn",
             {"approvalId": approval_id, "turnId": turn, "reason": reason[:200]})  # fmt: skip
    return [r[0] for r in rows]


def pending_count(conn: sqlite3.Connection, session_id: str) -> int:
    return int(conn.execute(
        "SELECT count(*) FROM approvals WHERE session_id = ? AND state = 'pending'", (session_id,)
    ).fetchone()[0])  # fmt: skip


def approval_json(row: tuple[Any, ...]) -> dict[str, Any]:
    """An approval as approval.show and approval.list return it (wire names)."""
    (approval_id, session_id, turn_id, kind, summary, options, can_remember, state, remember,
     message, revision, created, expires, resolved) = row  # fmt: skip
    out: dict[str, Any] = {
        "approvalId": approval_id, "sessionId": session_id, "turnId": turn_id, "kind": kind,
        "summary": summary, "options": orjson.loads(options), "canRemember": bool(can_remember),
        "state": state, "revision": revision, "createdAt": format_timestamp_ms(created),
    }  # fmt: skip
    if expires is not None:
        out["expiresAt"] = format_timestamp_ms(expires)
    if resolved is not None:
        out["resolvedAt"] = format_timestamp_ms(resolved)
    if remember:
        out["remember"] = True
    if message is not None:
        out["message"] = message
    return out


def read_approval(conn: sqlite3.Connection, approval_id: str) -> dict[str, Any]:
    """Raises `resource_not_found`."""
    row = conn.execute(f"SELECT {_COLUMNS} FROM approvals WHERE approval_id = ?",
                       (approval_id,)).fetchone()  # fmt: skip
    if row is None:
        raise missing(approval_id)
    return approval_json(row)


def list_approvals(
    conn: sqlite3.Connection, session_id: str | None, state: str | None, limit: int,
    after: int | None = None,
) -> list[tuple[int, dict[str, Any]]]:  # fmt: skip
    """Pending first, then newest first (by insertion); filtered by Session and state when
    given; each with its page position (`_approval_position`), continuing after `after`."""
    where: list[str] = []
    args: list[str | int] = []
    if session_id is not None:
        where.append("session_id = ?")
        args.append(session_id)
    if state is not None:
        where.append("state = ?")
        args.append(state)
    if after is not None:
        rowid, pending = divmod(after, 2)
        where.append("((state = 'pending') < ? OR ((state = 'pending') = ? AND rowid < ?))")
        args += [pending, pending, rowid]
    clause = f" WHERE {' AND '.join(where)}" if where else ""
    rows = conn.execute(
        f"SELECT rowid, state = 'pending', {_COLUMNS} FROM approvals{clause}"
        " ORDER BY state = 'pending' DESC, rowid DESC LIMIT ?",
        (*args, limit),
    ).fetchall()
    return [(_approval_position(r[0], bool(r[1])), approval_json(r[2:])) for r in rows]


def _approval_position(rowid: int, pending: bool) -> int:
    """Where an approval stands in approval.list's order, as one integer a cursor carries."""
    return rowid * 2 + int(pending)


def session_of_approval(conn: sqlite3.Connection, approval_id: str) -> tuple[str, str]:
    """The Session and call of an approval. Raises `resource_not_found`."""
    row = conn.execute("SELECT session_id, call_id FROM approvals WHERE approval_id = ?",
                       (approval_id,)).fetchone()  # fmt: skip
    if row is None:
        raise missing(approval_id)
    return str(row[0]), str(row[1])
