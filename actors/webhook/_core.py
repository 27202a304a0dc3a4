"""The pure core of a delivery: `(delivery, event, now) -> (delivery, actions)`.

An attempt's result becomes one of the delivery table's events (`_table`): a 2xx is
`attempt.succeeded`; a 410 is `attempt.gone` (and the action `DisableWebhook`); any other
failure, and an attempt that could not be made (refused destination, missing secret), is
`attempt.failed` while the schedule has a next step and `attempt.exhausted` after it. The
table decides whether the event applies; this module only computes the new fields. No I/O,
no clock: `now_ms` is an argument, so every path is tested without an event loop.
"""

from __future__ import annotations

import attrs

from ._http import SendKind, SendResult
from ._schedule import next_attempt_at
from ._table import DELIVERY_TABLE, NODE, DeliveryEvent, DeliveryState


@attrs.frozen
class DeliveryStatus:
    """The mutable part of a delivery row, as the core sees it."""

    state: DeliveryState
    attempts: int = 0  # attempts made in this round (a redelivery starts a new round)
    next_attempt_ms: int | None = None  # due time, exactly while pending
    last_status_code: int | None = None
    last_reason: str | None = None
    finished_ms: int | None = None
    redeliveries: int = 0

    @classmethod
    def new(cls, now_ms: int) -> DeliveryStatus:
        """A fresh delivery, due at once."""
        return cls(DeliveryState.PENDING, next_attempt_ms=now_ms)

    def due(self, now_ms: int) -> bool:
        return (
            self.state is DeliveryState.PENDING
            and self.next_attempt_ms is not None
            and self.next_attempt_ms <= now_ms
        )


@attrs.frozen
class DisableWebhook:
    """Action: the receiver answered 410; the webhook must stop (and its deliveries cancel)."""

    reason: str


Action = DisableWebhook


def attempt_event(status: DeliveryStatus, result: SendResult) -> DeliveryEvent:
    """Which table event an attempt's result is, given the attempts already made."""
    if result.kind is SendKind.SUCCEEDED:
        return DeliveryEvent.SUCCEEDED
    if result.kind is SendKind.GONE:
        return DeliveryEvent.GONE
    if next_attempt_at(status.attempts + 1, 0) is None:
        return DeliveryEvent.EXHAUSTED
    return DeliveryEvent.RETRY


def after_attempt(
    status: DeliveryStatus, result: SendResult, now_ms: int
) -> tuple[DeliveryStatus, tuple[Action, ...]]:
    """The delivery after one attempt ended (or could not be made) at `now_ms`.

    Raises MaiaError `invalid_state` for a delivery that is not pending (the table refuses).
    """
    event = attempt_event(status, result)
    DELIVERY_TABLE.step(status.state, event, caller=NODE)
    tried = attrs.evolve(
        status,
        attempts=status.attempts + 1,
        last_status_code=result.status_code,
        last_reason=result.reason,
    )
    if event is DeliveryEvent.RETRY:
        due = next_attempt_at(tried.attempts, now_ms, result.retry_after_ms)
        return attrs.evolve(tried, next_attempt_ms=due), ()
    target = DeliveryState.SUCCEEDED if event is DeliveryEvent.SUCCEEDED else DeliveryState.FAILED
    done = attrs.evolve(tried, state=target, next_attempt_ms=None, finished_ms=now_ms)
    actions: tuple[Action, ...] = ()
    if event is DeliveryEvent.GONE:
        actions = (DisableWebhook("the receiver answered 410 Gone"),)
    return done, actions


def redeliver(status: DeliveryStatus, now_ms: int, caller: str) -> DeliveryStatus:
    """Queue a finished delivery again, due now, for a new round of the schedule.

    Raises MaiaError `invalid_state` unless it succeeded or failed.
    """
    DELIVERY_TABLE.step(status.state, DeliveryEvent.REDELIVER, caller=caller)
    return attrs.evolve(
        status,
        state=DeliveryState.PENDING,
        attempts=0,
        next_attempt_ms=now_ms,
        finished_ms=None,
        redeliveries=status.redeliveries + 1,
    )


def cancel(status: DeliveryStatus, now_ms: int, reason: str) -> DeliveryStatus | None:
    """The delivery after its webhook stopped, or None when the table leaves it as it is."""
    if DELIVERY_TABLE.get(status.state, DeliveryEvent.CANCEL) is None:
        return None
    return attrs.evolve(
        status,
        state=DeliveryState.CANCELLED,
        next_attempt_ms=None,
        finished_ms=now_ms,
        last_reason=reason,
    )
