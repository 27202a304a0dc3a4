"""The webhook's transitions on a real SQLite file: revisions, cancellation, ping, redeliver."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import attrs
import orjson
import pytest

from actors.webhook import (
    DeliveryState,
    WebhookState,
    delivery_body_of,
    disable_gone,
    get_delivery,
    get_webhook,
    ping_webhook,
    process_batch,
    recent_deliveries,
    redeliver_delivery,
    remove_webhook,
    save_status,
)
from maia.core import MaiaError

from ._db import ACTOR, add, event, open_db

T = TypeVar("T")


def _tx(conn: sqlite3.Connection, fn: Callable[[], T]) -> T:
    conn.execute("BEGIN IMMEDIATE")
    try:
        result = fn()
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return result


def test_ping_queues_a_maia_ping_and_bumps_the_revision(tmp_path: Path) -> None:
    """test: revision 2, one pending maia.ping delivery naming the webhook."""
    with open_db(tmp_path) as conn:
        hook = add(conn)
        changed = _tx(conn, lambda: ping_webhook(conn, hook, 1, 3000, ACTOR))
        assert changed.webhook.revision == 2
        assert changed.delivery_id is not None
        body = orjson.loads(delivery_body_of(conn, changed.delivery_id))
        assert (body["type"], body["data"]["webhookId"]) == ("maia.ping", hook)


def test_stale_revision_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    """A remove at an old revision is revision_conflict; the webhook stays as it was."""
    with open_db(tmp_path) as conn:
        hook = add(conn)
        _tx(conn, lambda: ping_webhook(conn, hook, 1, 3000, ACTOR))
        with pytest.raises(MaiaError) as info:
            _tx(conn, lambda: remove_webhook(conn, hook, 1, 4000, ACTOR))
        assert info.value.code == "revision_conflict"
        record = get_webhook(conn, hook)
        assert record is not None
        assert (record.state, record.revision) == (WebhookState.ACTIVE, 2)


def test_remove_cancels_pending_deliveries(tmp_path: Path) -> None:
    """Removing a webhook cancels what it had pending, and later events are not queued."""
    with open_db(tmp_path) as conn:
        hook = add(conn)
        event(conn, "turn.completed")
        _tx(conn, lambda: process_batch(conn, 5000))
        _tx(conn, lambda: remove_webhook(conn, hook, 1, 6000, ACTOR))
        assert [d.status.state for d in recent_deliveries(conn, hook)] == [DeliveryState.CANCELLED]
        event(conn, "turn.completed")
        assert _tx(conn, lambda: process_batch(conn, 7000)).written == {}
        with pytest.raises(MaiaError) as info:
            _tx(conn, lambda: ping_webhook(conn, hook, 2, 8000, ACTOR))
        assert info.value.code == "invalid_state"


def test_redeliver_requeues_a_finished_delivery(tmp_path: Path) -> None:
    """A succeeded delivery goes back to pending with the same message ID."""
    with open_db(tmp_path) as conn:
        hook = add(conn)
        delivery_id = _tx(conn, lambda: ping_webhook(conn, hook, 1, 3000, ACTOR)).delivery_id
        assert delivery_id is not None
        pending = get_delivery(conn, delivery_id)
        assert pending is not None
        with pytest.raises(MaiaError):  # still pending: nothing to redeliver
            _tx(conn, lambda: redeliver_delivery(conn, delivery_id, 2, 3500, ACTOR))
        done = attrs.evolve(pending.status, state=DeliveryState.SUCCEEDED, next_attempt_ms=None)
        _tx(conn, lambda: save_status(conn, delivery_id, done, 3600))
        changed = _tx(conn, lambda: redeliver_delivery(conn, delivery_id, 2, 4000, ACTOR))
        again = get_delivery(conn, delivery_id)
        assert again is not None
        assert (again.status.state, again.status.redeliveries) == (DeliveryState.PENDING, 1)
        assert again.message_id == pending.message_id
        assert changed.webhook.revision == 3


def test_gone_disables_once(tmp_path: Path) -> None:
    """A 410 disables an active webhook; a second one finds nothing to do."""
    with open_db(tmp_path) as conn:
        hook = add(conn)
        after = _tx(conn, lambda: disable_gone(conn, hook, "410", 3000, "node"))
        assert after is not None
        assert after.state is WebhookState.DISABLED
        assert _tx(conn, lambda: disable_gone(conn, hook, "410", 3001, "node")) is None
