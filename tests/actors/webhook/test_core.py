"""The webhook and delivery tables, and the pure delivery step (no I/O, no clock)."""

from __future__ import annotations

from typing import Any

import pytest

from actors.webhook import (
    DELIVERY_TABLE,
    MAX_ATTEMPTS,
    RETRY_SCHEDULE_MS,
    WEBHOOK_TABLE,
    DeliveryState,
    DeliveryStatus,
    DisableWebhook,
    SendKind,
    SendResult,
    after_attempt,
    cancel,
    redeliver,
)
from maia.core import MaiaError

FAIL = SendResult(SendKind.FAILED, 500, "http_500")
OK = SendResult(SendKind.SUCCEEDED, 204, "http_204")
GONE = SendResult(SendKind.GONE, 410, "http_410")


@pytest.mark.parametrize("table", [WEBHOOK_TABLE, DELIVERY_TABLE])
def test_every_pair_either_steps_or_refuses(table: Any) -> None:
    """Each (state, event) pair has a row or is a typed refusal naming both."""
    for state in table.states:
        for event in table.events:
            found = table.get(state, event)
            if found is not None:
                caller = sorted(found.callers)[0]
                assert table.step(state, event, caller=caller, expected_revision=1) is found
                continue
            with pytest.raises(MaiaError) as info:
                table.step(state, event, caller="node", aggregate_id="x")
            assert (info.value.details["state"], info.value.details["event"]) == (
                state.value,
                event.value,
            )


def test_failures_follow_the_schedule_then_fail() -> None:
    """Eight failed attempts: each retry due at the schedule's step, then failed for good."""
    status, now = DeliveryStatus.new(0), 0
    dues = []
    for _ in range(MAX_ATTEMPTS - 1):
        status, actions = after_attempt(status, FAIL, now)
        assert status.state is DeliveryState.PENDING
        assert actions == ()
        assert status.next_attempt_ms is not None
        dues.append(status.next_attempt_ms - now)
        now = status.next_attempt_ms
    assert dues == list(RETRY_SCHEDULE_MS[1:])
    status, _ = after_attempt(status, FAIL, now)
    assert (status.state, status.attempts, status.next_attempt_ms) == (
        DeliveryState.FAILED,
        MAX_ATTEMPTS,
        None,
    )
    assert status.finished_ms == now


def test_success_ends_and_410_disables() -> None:
    """A 2xx succeeds; a 410 fails the delivery and asks to disable the webhook."""
    done, actions = after_attempt(DeliveryStatus.new(0), OK, 7)
    assert (done.state, done.last_status_code, actions) == (DeliveryState.SUCCEEDED, 204, ())
    gone, actions = after_attempt(DeliveryStatus.new(0), GONE, 7)
    assert gone.state is DeliveryState.FAILED
    assert isinstance(actions[0], DisableWebhook)


def test_retry_after_pushes_the_next_attempt() -> None:
    """A 429 asking for 60 s delays the 5 s retry to 60 s."""
    busy = SendResult(SendKind.FAILED, 429, "http_429", retry_after_ms=60_000)
    status, _ = after_attempt(DeliveryStatus.new(0), busy, 100)
    assert status.next_attempt_ms == 60_100


def test_finished_attempts_are_refused() -> None:
    """An attempt result for a delivery that is no longer pending is refused by the table."""
    done, _ = after_attempt(DeliveryStatus.new(0), OK, 1)
    with pytest.raises(MaiaError) as info:
        after_attempt(done, FAIL, 2)
    assert info.value.code == "invalid_state"


def test_redeliver_starts_a_new_round() -> None:
    """Redeliver queues a finished delivery due now with a fresh schedule; pending refuses."""
    done, _ = after_attempt(DeliveryStatus.new(0), OK, 1)
    again = redeliver(done, 50, "client")
    assert (again.state, again.attempts, again.next_attempt_ms, again.redeliveries) == (
        DeliveryState.PENDING,
        0,
        50,
        1,
    )
    with pytest.raises(MaiaError):
        redeliver(again, 60, "client")


def test_cancel_only_what_the_table_allows() -> None:
    """A pending delivery is cancelled when its webhook stops; a succeeded one is kept."""
    cancelled = cancel(DeliveryStatus.new(0), 5, "webhook removed")
    assert cancelled is not None
    assert cancelled.state is DeliveryState.CANCELLED
    done, _ = after_attempt(DeliveryStatus.new(0), OK, 1)
    assert cancel(done, 5, "webhook removed") is None


def test_docs_show_the_tables_and_the_schedule() -> None:
    """docs/webhooks.md draws both tables as they are and states the schedule as it is."""
    from pathlib import Path

    from actors._diagrams import render_mermaid
    from actors.webhook import schedule_text

    doc = (Path(__file__).resolve().parents[3] / "docs" / "webhooks.md").read_text()
    for table in (WEBHOOK_TABLE, DELIVERY_TABLE):
        assert render_mermaid(table).strip() in doc
    assert schedule_text() in " ".join(doc.replace("**", "").split())
