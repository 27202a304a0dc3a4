"""The webhook kind: its registry of `WebhookActor`s and the outbox processor beside it.

`WEBHOOKS` goes in the Node's kind list (`open_actor_runtime(kinds=...)`); handlers reach
its facade, `WebhookService`, as `runtime[WEBHOOKS]`. Opening it:
  1. marks attempts the previous Node left in flight as `unknown` (their deliveries stay
     pending and are sent again: the window in which a receiver may see a message twice);
  2. starts the registry and the outbox processor (`serve_outbox`), which runs a batch
     whenever a commit appended events and tells each webhook that got deliveries to look;
  3. wakes every active webhook with pending deliveries.
Nothing here waits on a receiver: the processor only writes rows and tells actors (each tell
bounded), so neither the journal nor the API waits for a slow or dead receiver.
"""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any, Final

import attrs
import trio

from actors import ActorError, ActorRegistry, ActorRuntime, Edge, TransitionTable
from storage import EventRecord

from ._actor import Kick, Restarted, WebhookActor, WebhookContext, WebhookMessage
from ._deliveries import (
    interrupted_attempts,
    webhooks_with_pending,
)
from ._http import HttpxClient
from ._outbox import process_batch
from ._sql import (
    get_webhook,
    has_active_webhooks,
)
from ._ssrf import IPNetwork, parse_allow_addresses, system_resolver
from ._table import DELIVERY_TABLE, WEBHOOK_TABLE

log = logging.getLogger("maia.webhooks")
TELL_BOUND_S: Final = 1.0
PROCESSOR_BACKOFF_S: Final = (0.1, 1.0, 5.0, 30.0)
IDLE_ADVANCE_S: Final = 30.0  # with no active webhook, the checkpoint moves this often
ASK_TIMEOUT_S: Final = 4.5
IDLE_S: Final = 300.0  # an idle webhook actor is passivated (its timers wake it again)

# Who sends what to a webhook actor, drawn in docs/lifecycles.md (`python -m actors._diagrams`).
EDGES: Final = (
    Edge("api", "webhook", "ask", ("ConfirmChange",), f"mailbox 64, deadline {ASK_TIMEOUT_S} s"),
    Edge("webhook outbox", "webhook", "tell", ("Kick",), f"mailbox 64, bounded {TELL_BOUND_S} s"),
    Edge("webhook outbox", "storage", "ask", ("read", "write"), "mailbox 4096, admission 5 s"),
    Edge("webhook", "storage", "ask", ("write", "read"), "mailbox 4096, admission 5 s"),
    Edge("webhook", "receiver", "send", ("POST",), "15 s per attempt", via_effect=True),
    Edge("webhook", "webhook", "tell", ("AttemptDone",), "mailbox 64", via_effect=True),
)  # fmt: skip


@attrs.define(eq=False)
class WebhookService:
    """What handlers use: ask a webhook's actor to apply a confirmed change."""

    registry: ActorRegistry[WebhookMessage, Any]
    processed_batches: int = 0

    async def ask(self, webhook_id: str, message: WebhookMessage) -> Any:
        return await self.registry.ask(webhook_id, message, within=ASK_TIMEOUT_S)

    async def kick(self, webhook_id: str) -> None:
        """Tell a webhook to look at its deliveries (bounded; a full mailbox will look anyway)."""
        with trio.move_on_after(TELL_BOUND_S):
            try:
                await self.registry.tell(webhook_id, Kick())
            except ActorError:
                log.warning("webhook %s not told about new deliveries", webhook_id)


async def serve_outbox(
    runtime: ActorRuntime, service: WebhookService, *,
    task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
) -> None:  # fmt: skip
    """Run the outbox processor until cancelled: a batch per commit that appended events.
    With no active webhook a batch only moves the checkpoint to the journal's head, so it
    runs at most every IDLE_ADVANCE_S then: a write per turn for nothing cost the turn path
    a fifth of its statements (a new webhook starts after its own `after_position`, so a
    lagging checkpoint delivers nothing twice and misses nothing). Whether one is active is
    read again only after a commit with a `webhook.*` event (every change of a webhook's
    state emits one), not after every commit: a read per turn cost the turn path a
    reader-thread round trip."""
    store, clock = runtime.store, runtime.clock
    advanced_at = -math.inf  # trio time of the last batch with no active webhook
    wanted = trio.Event()
    wanted.set()  # catch up with what the journal got while the Node was down
    stale = True  # whether `active` must be read again

    def on_commit(events: tuple[EventRecord, ...]) -> None:
        nonlocal stale
        stale = stale or any(e.event_type.startswith("webhook.") for e in events)
        wanted.set()

    remove = store.add_commit_listener(on_commit)
    active = True
    failures = 0
    try:
        task_status.started()
        while True:
            await wanted.wait()
            wanted = trio.Event()
            try:
                if stale:
                    stale = False  # a webhook commit during the read marks it again
                    try:
                        active = await store.read(has_active_webhooks)
                    except BaseException:
                        stale = True
                        raise
                if not active:
                    if trio.current_time() - advanced_at < IDLE_ADVANCE_S:
                        continue
                    advanced_at = trio.current_time()
                batch = await store.write(lambda c: process_batch(c, clock.wall_ms()))
            except Exception:  # a required processor blocks and retries, never skips
                log.exception("webhook outbox batch failed; retrying")
                await trio.sleep(PROCESSOR_BACKOFF_S[min(failures, 3)])
                failures += 1
                wanted.set()
                continue
            failures = 0
            service.processed_batches += 1
            for webhook_id in batch.written:
                await service.kick(webhook_id)
            if batch.more:
                wanted.set()
    finally:
        remove()


def _admitted_allow(config_of: Any) -> Callable[[], Awaitable[Sequence[IPNetwork]]] | None:
    """Each attempt's allow-list, read from the admitted configuration (`config_of`, the
    service layer's): an admitted `webhooks.allowAddresses` applies without a restart."""
    if config_of is None:
        return None

    async def allow() -> Sequence[IPNetwork]:
        effective = await config_of(None)
        return parse_allow_addresses(effective.user.webhooks.allow_addresses)

    return allow


@attrs.frozen
class WebhookKind:
    """The kind the runtime opens (`Kind` protocol)."""

    name: str = "webhook"
    edges: Sequence[Edge] = EDGES

    @property
    def tables(self) -> Sequence[TransitionTable[Any, Any]]:
        return (WEBHOOK_TABLE, DELIVERY_TABLE)

    @asynccontextmanager
    async def open(self, runtime: ActorRuntime) -> AsyncIterator[WebhookService]:
        options = runtime.options
        ctx = WebhookContext(
            store=runtime.store,
            client=options.get("webhook.client") or HttpxClient(),
            environ=runtime.environ,
            allow=parse_allow_addresses(runtime.config.webhooks.allow_addresses),
            resolver=options.get("webhook.resolver") or system_resolver,
            allow_of=_admitted_allow(options.get("config_of")),
        )
        store = runtime.store
        now = runtime.clock.wall_ms()
        lost = await store.write(lambda c: interrupted_attempts(c, now))
        if lost:
            log.warning("%d webhook attempts were in flight when the Node stopped", lost)
        holder: dict[str, ActorRegistry[WebhookMessage, Any]] = {}

        async def spawn(webhook_id: str) -> WebhookActor:
            record = await store.read(lambda c: get_webhook(c, webhook_id))
            registry = holder["registry"]

            async def tell_self(message: WebhookMessage) -> None:
                await registry.tell(webhook_id, message)

            path = runtime.write_path(self.name, webhook_id)
            return WebhookActor(ctx, path, webhook_id, record, tell_self)

        async with trio.open_nursery() as nursery:  # the kind's lifetime
            registry: ActorRegistry[WebhookMessage, Any] = await runtime.start_registry(
                self.name, spawn, nursery=nursery, restart_message=Restarted,
                idle_s=options.get("webhook.idle_s", IDLE_S),
            )  # fmt: skip
            holder["registry"] = registry
            service = WebhookService(registry)
            await nursery.start(serve_outbox, runtime, service)
            for webhook_id in await store.read(webhooks_with_pending):
                nursery.start_soon(service.kick, webhook_id)
            try:
                yield service
            finally:
                nursery.cancel_scope.cancel()


WEBHOOKS: Final = WebhookKind()
