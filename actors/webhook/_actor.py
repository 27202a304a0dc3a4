"""The `WebhookActor`: one per webhook, owning its row and the delivery of its outbox.

It applies the webhook's transitions (the operator's confirmed changes, the Node's `gone`)
through the one write path, and delivers the webhook's pending deliveries one at a time: the
one due first, then in order of first attempt. Each attempt is recorded before it is sent
(`sending`) and its outcome after (`succeeded`, `failed`, `gone`), each in its own write;
the POST itself runs as an effect, so the actor keeps taking messages while a receiver is
slow, and a slow receiver holds up nobody but its own webhook.

Timing is a durable timer (`Wake("deliver")`), armed at the next due attempt whenever that
moves. While an attempt is in flight the timer is armed a little past the attempt's bound,
so a Node that dies mid-attempt resends it after the restart (the receiver may have seen it:
at least once; a 2xx that was recorded is never sent again).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final

import attrs

from actors import Command, EffectScope, Envelope, Fired, Wake, Write, WritePath
from maia.core import MaiaError
from storage import event_correlation

from ._changes import (
    Proof,
    WebhookSpec,
    add_write,
    gone_write,
    ping_write,
    redeliver_write,
    remove_write,
)
from ._core import DeliveryStatus, DisableWebhook, after_attempt
from ._deliveries import (
    delivery_body_of,
    finish_attempt,
    get_delivery,
    next_pending,
    save_status,
    start_attempt,
)
from ._http import REQUEST_TIMEOUT_S, SendKind, SendResult, WebhookClient
from ._signing import SecretUnavailable, read_secret, signed_headers
from ._sql import (
    WebhookRecord,
)
from ._ssrf import DestinationRefused, IPNetwork, Resolver, resolve_destination
from ._table import WebhookState

log = logging.getLogger("maia.webhooks")
DELIVER: Final = "deliver"
RESCUE_MS: Final = int(REQUEST_TIMEOUT_S * 1000) + 15_000  # past an attempt's bound


@attrs.frozen
class ConfirmChange:
    """An operator's confirmed change: add (spec), remove, test, redeliver (delivery)."""

    kind: str
    command: Command
    proof: Proof
    spec: WebhookSpec | None = None
    expected_revision: int | None = None
    delivery_id: str | None = None


@attrs.frozen
class Kick:
    """Look at the pending deliveries again (new ones were queued)."""


@attrs.frozen
class Restarted:
    """Told after the actor restarted or its Node started."""


@attrs.frozen
class AttemptDone:
    """What an attempt's effect reports: which attempt, and how it ended."""

    delivery_id: str
    number: int
    result: SendResult


WebhookMessage = ConfirmChange | Kick | Restarted | AttemptDone | Fired


@attrs.frozen
class WebhookContext:
    """What every webhook actor of a Node shares."""

    store: Any  # storage.Storage
    client: WebhookClient
    environ: Any  # Mapping[str, str]: where secrets are read at send time
    allow: Sequence[IPNetwork]
    resolver: Resolver
    # webhooks.allowAddresses as admitted now (the Node's service layer); None: `allow`.
    allow_of: Callable[[], Awaitable[Sequence[IPNetwork]]] | None = None


class WebhookActor:
    """A `Behaviour` for the webhook registry (see the module)."""

    def __init__(self, ctx: WebhookContext, path: WritePath, webhook_id: str,
                 record: WebhookRecord | None,
                 tell_self: Callable[[WebhookMessage], Awaitable[None]]) -> None:  # fmt: skip
        self.ctx = ctx
        self.path = path
        self.webhook_id = webhook_id
        self.record = record
        self._tell_self = tell_self
        self._effects: EffectScope | None = None
        self._in_flight: str | None = None
        self._armed_at: int | None = None  # where the durable wake is, as far as we know

    def attach(self, scope: EffectScope) -> None:
        self._effects = scope

    async def handle_batch(self, envelopes: list[Envelope[WebhookMessage]]) -> None:
        for envelope in envelopes:
            if isinstance(envelope.message, Fired):
                continue  # answered by the pump: a failed claim is refused, and fires again
            try:
                envelope.resolve(await self.handle(envelope.message))
            except MaiaError as refusal:
                envelope.refuse(refusal)
        await self._pump()  # a refusal here answers the Fired left unanswered
        for envelope in envelopes:
            if not envelope.answered:
                envelope.resolve(None)

    async def handle(self, message: WebhookMessage) -> Any:
        match message:
            case ConfirmChange():
                return await self._confirm(message)
            case AttemptDone():
                await self._attempt_done(message)
        return None  # Kick, Restarted, Fired: the pump after the batch looks again

    async def _confirm(self, message: ConfirmChange) -> Any:
        now = self.path.clock.wall_ms()
        record, command, proof = self.record, message.command, message.proof
        if message.kind == "add":
            assert message.spec is not None
            write = add_write(self.webhook_id, message.spec, command, proof, now)
        elif record is None:
            raise MaiaError("resource_not_found", f"webhook {self.webhook_id} does not exist",
                            {"resource": "webhook", "id": self.webhook_id})  # fmt: skip
        else:
            revision = message.expected_revision
            assert revision is not None
            if message.kind == "remove":
                write = remove_write(record, revision, command, proof, now)
            elif message.kind == "test":
                write = ping_write(record, revision, command, proof, now)
            else:
                assert message.delivery_id is not None
                write = redeliver_write(record, message.delivery_id, revision, command, proof,
                                        now)  # fmt: skip
        committed = await self.path.commit(write)
        if committed.applied and committed.records and committed.records[0] is not None:
            self.record = committed.records[0]
        return committed.mutation

    async def _attempt_done(self, done: AttemptDone) -> None:
        """Record the attempt's outcome and the delivery's next state in one write (with the
        webhook's `gone` transition on a 410)."""
        self._in_flight = None
        now = self.path.clock.wall_ms()
        result = done.result
        outcome = {SendKind.SUCCEEDED: "succeeded", SendKind.GONE: "gone"}.get(
            result.kind, "failed")  # fmt: skip
        delivery = await self.ctx.store.read(lambda c: get_delivery(c, done.delivery_id))
        status: DeliveryStatus | None = None
        actions: tuple[DisableWebhook, ...] = ()
        if delivery is not None:
            try:
                status, actions = after_attempt(delivery.status, result, now)
            except MaiaError:  # cancelled while in flight: only the attempt is recorded
                status = None

        def record_it(conn: Any, _: tuple[Any, ...]) -> None:
            finish_attempt(conn, done.delivery_id, done.number, outcome=outcome,
                           status_code=result.status_code, reason=result.reason,
                           now_ms=now)  # fmt: skip
            if status is not None:
                save_status(conn, done.delivery_id, status, now)

        write = Write(sql=record_it)
        record = self.record
        if actions and record is not None and record.state is WebhookState.ACTIVE:
            gone = gone_write(record, actions[0].reason, now)
            # caused by the delivery of its event, in that event's correlation
            cause = delivery.event_id if delivery is not None else None
            correlation = None
            if cause is not None:
                correlation = await self.ctx.store.read(lambda c: event_correlation(c, cause))
            write = attrs.evolve(gone, sql=_both(record_it, gone.sql), causation_id=cause,
                                 correlation_id=correlation)  # fmt: skip
        committed = await self.path.commit(write)
        if committed.records:
            self.record = committed.records[0]

    async def _pump(self) -> None:
        """Start the next due attempt, or arm the durable wake at the next due time."""
        record = self.record
        if self._in_flight is not None or self._effects is None:
            return
        pending = None
        if record is not None and record.state is WebhookState.ACTIVE:
            pending = await self.ctx.store.read(lambda c: next_pending(c, self.webhook_id))
        now = self.path.clock.wall_ms()
        if pending is None or pending.status.next_attempt_ms is None:
            await self._arm(None)
            return
        due = pending.status.next_attempt_ms
        if due > now:
            await self._arm(due)
            return
        assert record is not None
        delivery_id = pending.delivery_id
        numbers: list[int] = []

        def begin(conn: Any, _: tuple[Any, ...]) -> None:
            numbers.append(start_attempt(conn, delivery_id, now))

        rescue = now + RESCUE_MS
        await self.path.commit(Write(sql=begin, wakes=(Wake(DELIVER, at_wall_ms=rescue),)))
        self._armed_at = rescue
        self._in_flight = delivery_id
        attempt = self._attempt(record, pending.message_id, delivery_id, numbers[0])
        self._effects.start(f"deliver:{delivery_id}", attempt)

    async def _arm(self, due: int | None) -> None:
        if due == self._armed_at:
            return
        wake = Wake(DELIVER, cancel=True) if due is None else Wake(DELIVER, at_wall_ms=due)
        await self.path.commit(Write(wakes=(wake,)))
        self._armed_at = due

    def _attempt(self, record: WebhookRecord, message_id: str, delivery_id: str,
                 number: int) -> Callable[[], Awaitable[None]]:  # fmt: skip
        async def run() -> None:
            result = await self._send(record, message_id, delivery_id)
            await self._tell_self(AttemptDone(delivery_id, number, result))

        return run

    async def _send(self, record: WebhookRecord, message_id: str, delivery_id: str) -> SendResult:
        """One attempt: check the destination (resolving it), read the secret, sign, POST."""
        ctx = self.ctx
        try:
            allow = ctx.allow if ctx.allow_of is None else await ctx.allow_of()
            destination = await resolve_destination(record.url, allow, ctx.resolver)
            key = read_secret(ctx.environ, record.secret_env)
        except DestinationRefused as refused:
            return SendResult(SendKind.FAILED, None, f"destination_refused: {refused.message}")
        except SecretUnavailable as missing:
            return SendResult(SendKind.FAILED, None, f"{missing.reason}: {missing}")
        body = await ctx.store.read(lambda c: delivery_body_of(c, delivery_id))
        now = self.path.clock.wall_ms()
        headers = signed_headers(key, message_id, now, body)
        return await ctx.client.post(destination, headers, body, now)


def _both(first: Any, second: Any) -> Any:
    def run(conn: Any, records: tuple[Any, ...]) -> None:
        first(conn, records)
        if second is not None:
            second(conn, records)

    return run
