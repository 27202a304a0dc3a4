"""The webhooks table (migration `_WEBHOOKS` in storage/_schema.py): the record, the
runtime's `Rows` for it, and its reads; the deliveries and attempts are in `_deliveries`.

Call these inside a `Storage.write` fn (writes) or a `Storage.read` fn (reads).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any, Final

import attrs
import orjson

from actors import EventOwner, Transition
from storage import OWNER_NO

from ._table import WebhookState

MAX_WEBHOOKS: Final = 64  # active or disabled webhooks on one Node
_HOOK_COLUMNS: Final = (
    "webhook_id, url, event_types, project_id, session_id, secret_env, description, state,"
    " state_reason, revision, after_position, created_ms, updated_ms"
)


@attrs.frozen
class WebhookRecord:
    """One webhook row (the secret's variable name, never its value)."""

    webhook_id: str
    url: str
    event_types: tuple[str, ...]
    project_id: str | None
    session_id: str | None
    secret_env: str
    description: str | None
    state: WebhookState
    state_reason: str | None
    revision: int
    after_position: int
    created_ms: int
    updated_ms: int

    @property
    def id(self) -> str:
        return self.webhook_id

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> WebhookRecord:
        return cls(row[0], row[1], tuple(orjson.loads(row[2])), row[3], row[4], row[5], row[6],
                   WebhookState(row[7]), row[8], row[9], row[10], row[11], row[12])  # fmt: skip

    def matches(self, event_type: str, project_id: str | None, session_id: str | None) -> bool:
        """Whether an event of this type and scope is one this webhook asked for."""
        if event_type not in self.event_types and "*" not in self.event_types:
            return False
        if self.project_id is not None and project_id != self.project_id:
            return False
        return self.session_id is None or session_id == self.session_id


class WebhookRows:
    """The runtime's `Rows` for webhooks: insert, compare-and-set update, event owner."""

    resource = "webhook"

    def insert(self, conn: sqlite3.Connection, record: WebhookRecord, now_ms: int) -> None:
        """Insert at the journal's head: only later events are delivered to it."""
        conn.execute(
            f"INSERT INTO webhooks ({_HOOK_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?,"
            " (SELECT coalesce(max(position), 0) FROM events), ?, ?)",
            (record.webhook_id, record.url, orjson.dumps(list(record.event_types)).decode(),
             record.project_id, record.session_id, record.secret_env, record.description,
             record.state.value, record.state_reason, record.revision, now_ms, now_ms),
        )  # fmt: skip

    def update(
        self, conn: sqlite3.Connection, before: WebhookRecord, after: WebhookRecord, now_ms: int
    ) -> bool:
        return conn.execute(
            "UPDATE webhooks SET state = ?, state_reason = ?, revision = ?, updated_ms = ?"
            " WHERE webhook_id = ? AND revision = ?",
            (after.state.value, after.state_reason, after.revision, now_ms, after.webhook_id,
             before.revision),
        ).rowcount == 1  # fmt: skip

    def owner(self, record: WebhookRecord) -> EventOwner:
        return EventOwner(record.webhook_id, "webhook", record.project_id)

    def payload(self, row: Transition[Any, Any], after: WebhookRecord) -> dict[str, Any]:
        body: dict[str, Any] = {"webhookId": after.webhook_id, "state": after.state.value}
        if after.state_reason is not None:
            body["reason"] = after.state_reason
        return body


WEBHOOK_ROWS: Final = WebhookRows()


def get_webhook(conn: sqlite3.Connection, webhook_id: str) -> WebhookRecord | None:
    row = conn.execute(
        f"SELECT {_HOOK_COLUMNS} FROM webhooks WHERE webhook_id = ?", (webhook_id,)
    ).fetchone()
    return None if row is None else WebhookRecord.from_row(row)


def list_webhooks(
    conn: sqlite3.Connection, *, states: Sequence[WebhookState] = (), limit: int = 200
) -> tuple[WebhookRecord, ...]:
    sql = f"SELECT {_HOOK_COLUMNS} FROM webhooks"
    args: list[Any] = []
    if states:
        sql += f" WHERE state IN ({', '.join('?' * len(states))})"
        args += [s.value for s in states]
    rows = conn.execute(sql + " ORDER BY created_ms, webhook_id LIMIT ?", (*args, limit))
    return tuple(WebhookRecord.from_row(r) for r in rows)


def page_webhooks(
    conn: sqlite3.Connection, *, states: Sequence[WebhookState], after: int | None, limit: int
) -> list[tuple[int, WebhookRecord]]:
    """(rowid, webhook) oldest first (insertion order), filtered on `states`; `after` is the
    rowid the previous page ended on (webhooks.list's cursor)."""
    where = ["rowid > ?"]
    args: list[Any] = [-1 if after is None else after]
    if states:
        where.append(f"state IN ({', '.join('?' * len(states))})")
        args += [s.value for s in states]
    rows = conn.execute(
        f"SELECT rowid, {_HOOK_COLUMNS} FROM webhooks WHERE {' AND '.join(where)}"
        " ORDER BY rowid LIMIT ?",
        (*args, limit),
    )
    return [(int(r[0]), WebhookRecord.from_row(r[1:])) for r in rows]


def has_active_webhooks(conn: sqlite3.Connection) -> bool:
    row = conn.execute("SELECT 1 FROM webhooks WHERE state = 'active' LIMIT 1").fetchone()
    return row is not None


def count_live_webhooks(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT count(*) FROM webhooks WHERE state != 'removed'").fetchone()[0])


def latest_event(conn: sqlite3.Connection, owner_id: str) -> tuple[str, int]:
    """(event ID, position) of the newest event of `owner_id`."""
    row = conn.execute(
        f"SELECT event_id, position FROM events WHERE owner_no = {OWNER_NO}"
        " ORDER BY owner_seq DESC LIMIT 1",
        (owner_id,),
    ).fetchone()
    return str(row[0]), int(row[1])


def preview_revision(conn: sqlite3.Connection, preview_id: str) -> int | None:
    """The webhook revision a preview bound to its proof (storage's `previews.targets`), or
    None for an unknown preview; the confirm still spends the proof, which checks the rest."""
    row = conn.execute("SELECT targets FROM previews WHERE preview_id = ?", (preview_id,))
    found = row.fetchone()
    if found is None:
        return None
    for target_type, _, revision in orjson.loads(found[0]):
        if target_type == "webhook" and revision is not None:
            return int(revision)
    return None
