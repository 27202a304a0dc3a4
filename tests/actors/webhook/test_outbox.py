"""The outbox processor on a real SQLite file: matching, idempotence, atomic checkpoints."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import orjson

from actors.webhook import (
    delivery_body_of,
    delivery_ids,
    outbox_watermark,
    process_batch,
    read_checkpoint,
    recent_deliveries,
)
from storage import append_event

from ._db import add, event, open_db


def _batch(conn: sqlite3.Connection, limit: int = 128) -> dict[str, int]:
    conn.execute("BEGIN IMMEDIATE")
    done = process_batch(conn, 5000, limit)
    conn.execute("COMMIT")
    return dict(done.written)


def _types(conn: sqlite3.Connection, hook: str) -> list[str]:
    return [d.event_type for d in reversed(recent_deliveries(conn, hook))]


def test_matching_events_after_the_add_become_deliveries(tmp_path: Path) -> None:
    """Only later events of the named types, outside webhooks and not sensitive, are queued."""
    with open_db(tmp_path) as conn:
        event(conn, "turn.completed")  # before the webhook: never delivered
        hook = add(conn, types=("turn.completed", "session.failed"))
        wanted = event(conn, "turn.completed")
        event(conn, "turn.started")
        event(conn, "turn.completed", classification="sensitive")
        event(conn, "session.failed", owner_type="webhook")
        event(conn, "session.failed")
        assert _batch(conn) == {hook: 2}
        assert _types(conn, hook) == ["turn.completed", "session.failed"]
        delivery_id, message_id = delivery_ids(hook, wanted)
        body = orjson.loads(delivery_body_of(conn, delivery_id))
        assert body["type"] == "turn.completed"
        assert body["data"]["eventId"] == wanted
        assert body["data"]["payload"] == {"n": 1}
        assert recent_deliveries(conn, hook)[-1].message_id == message_id


def test_a_second_run_writes_nothing(tmp_path: Path) -> None:
    """Re-reading a batch (a crash before the checkpoint) inserts no delivery twice."""
    with open_db(tmp_path) as conn:
        hook = add(conn)
        event(conn, "turn.completed")
        assert _batch(conn) == {hook: 1}
        conn.execute("UPDATE processor_checkpoints SET acknowledged_sequence = 0")
        assert _batch(conn) == {}
        assert len(recent_deliveries(conn, hook)) == 1


def test_checkpoint_and_rows_roll_back_together(tmp_path: Path) -> None:
    """An event that never commits leaves no delivery and no checkpoint move behind."""
    with open_db(tmp_path) as conn:
        hook = add(conn)
        before = read_checkpoint(conn)
        conn.execute("BEGIN IMMEDIATE")
        append_event(conn, owner_id="session_1", event_type="turn.completed", payload={},
                     now_ms=1)  # fmt: skip
        assert process_batch(conn, 5000).written == {hook: 1}  # seen inside the transaction
        conn.execute("ROLLBACK")
        assert recent_deliveries(conn, hook) == ()
        assert read_checkpoint(conn) == before


def test_batches_are_bounded_and_resume(tmp_path: Path) -> None:
    """A full batch says there is more; the next resumes after the checkpoint."""
    with open_db(tmp_path) as conn:
        hook = add(conn)
        for _ in range(5):
            event(conn, "turn.completed")
        assert _batch(conn, limit=3) == {hook: 3}
        assert _batch(conn, limit=3) == {hook: 2}
        assert len(recent_deliveries(conn, hook)) == 5


def test_project_filter(tmp_path: Path) -> None:
    """A webhook naming a Project gets only that Project's events."""
    with open_db(tmp_path) as conn:
        hook = add(conn, project_id="project_a")
        event(conn, "turn.completed", project_id="project_b")
        event(conn, "turn.completed", project_id="project_a")
        assert _batch(conn) == {hook: 1}


def test_no_webhooks_skips_to_the_head(tmp_path: Path) -> None:
    """With no webhook the checkpoint jumps to the journal's head, so a new webhook never
    makes the processor scan old history; the watermark for retention follows it."""
    with open_db(tmp_path) as conn:
        for _ in range(3):
            event(conn, "turn.completed")
        assert outbox_watermark(conn) == 0
        _batch(conn)
        head = conn.execute("SELECT max(position) FROM events").fetchone()[0]
        assert read_checkpoint(conn).acknowledged_sequence == head
        assert outbox_watermark(conn) == head


def test_the_migration_adds_the_webhook_tables(tmp_path: Path) -> None:
    """A migrated database is at the newest version and has the four webhook tables."""
    from storage import SCHEMA_VERSION

    with open_db(tmp_path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert {"webhooks", "webhook_deliveries", "webhook_attempts",
                "processor_checkpoints"} <= names  # fmt: skip


def test_a_batch_writes_a_bounded_number_of_deliveries(tmp_path: Path) -> None:
    """With many webhooks a batch takes fewer events: at most MAX_BATCH_DELIVERIES // hooks
    (the write runs in the Node's trio thread), and the next batches resume after it."""
    from actors.webhook._outbox import MAX_BATCH_DELIVERIES

    with open_db(tmp_path) as conn:
        hooks = [add(conn, f"c{i}") for i in range(64)]
        per_batch = MAX_BATCH_DELIVERIES // len(hooks)
        for _ in range(per_batch * 2 + 1):
            event(conn, "turn.completed")
        assert _batch(conn) == dict.fromkeys(hooks, per_batch)
        assert _batch(conn) == dict.fromkeys(hooks, per_batch)
        assert _batch(conn) == dict.fromkeys(hooks, 1)
