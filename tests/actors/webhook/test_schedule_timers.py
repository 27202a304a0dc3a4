"""The whole retry schedule on the runtime's durable timers, in virtual time: real storage and
the real webhook kind under trio's MockClock, with an in-loop client double that answers 500
(the real HTTP client is tested against a real receiver in test_http and test_delivery).

The clock never jumps by itself: storage works in a thread, in real time, and an autojump
taken while a write runs would skip a deadline (DESIGN: MockClock jumps while a thread works).
The test moves it instead, to the due time of each retry once storage has recorded it, and
waits in real time (bounded polls) for the kind to act."""

from __future__ import annotations

import base64
import math
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio

import storage
from actors import ActorRuntime, Command, TrioClock, open_actor_runtime
from actors.webhook import (
    RETRY_SCHEDULE_MS,
    WEBHOOKS,
    ConfirmChange,
    Destination,
    Proof,
    SendKind,
    SendResult,
    WebhookSpec,
    recent_deliveries,
    webhook_id_for,
)
from maia.config import UserConfig, WebhookSettings

CLOCK = TrioClock()
SECRET = "whsec_" + base64.b64encode(b"t" * 32).decode()
DIGEST = "sha256:" + "0" * 64
OP = "webhooks.change.confirm"


class FailingClient:
    """Answers every attempt with `status` (and Retry-After), recording the wall time."""

    def __init__(self, status: int = 500, retry_after_ms: int | None = None) -> None:
        self.status, self.retry_after_ms = status, retry_after_ms
        self.sent_at: list[int] = []
        self.ids: list[str] = []
        self.sent = trio.Event()

    async def post(self, destination: Destination, headers: Sequence[tuple[str, str]],
                   body: bytes, now_ms: int) -> SendResult:  # fmt: skip
        await trio.lowlevel.checkpoint()
        self.sent_at.append(now_ms)
        self.ids.append(dict(headers)["webhook-id"])
        self.sent.set()
        self.sent = trio.Event()
        return SendResult(SendKind.FAILED, self.status, f"http_{self.status}",
                          self.retry_after_ms)  # fmt: skip


MAX_POLLS = 3000  # real-time polls of ~20 ms each: a broken kind fails in about a minute
NUDGE_AFTER = 25  # polls (~0.5 s real) a due retry may take before the clock is nudged
NUDGE_S = 0.1


@pytest.fixture
def clock() -> trio.testing.MockClock:
    """Virtual time that moves only when the test jumps it (no autojump)."""
    return trio.testing.MockClock()


async def _real_pause() -> None:
    await trio.to_thread.run_sync(time.sleep, 0.02)  # real time passes, virtual time does not


async def _drive(
    clock: trio.testing.MockClock,
    runtime: ActorRuntime,
    client: FailingClient,
    attempts: int,
    before: int = 0,
) -> None:
    """Until `client` had `attempts` attempts: whenever the newest delivery is recorded
    pending after the last attempt (`before` of them made by an earlier run), jump the clock
    to its due time. A due retry that has not come after `NUDGE_AFTER` polls gets the clock
    moved by `NUDGE_S` (a timer whose kind was not routed yet retries a virtual second later).
    """
    idle = 0
    for _ in range(MAX_POLLS):
        if len(client.sent_at) >= attempts:
            return
        found = await runtime.store.read(lambda c: _newest(c))
        if (
            found is not None
            and found.state.value == "pending"
            and (
                found.attempts == before + len(client.sent_at) and found.next_attempt_ms is not None
            )
        ):
            ahead_ms = found.next_attempt_ms - CLOCK.wall_ms()
            if ahead_ms > 0:
                clock.jump(ahead_ms / 1000)
                idle = 0
            else:
                idle += 1
                if idle >= NUDGE_AFTER:
                    clock.jump(NUDGE_S)
                    idle = 0
        await _real_pause()
    raise AssertionError(f"{len(client.sent_at)} of {attempts} attempts came")


def _newest(conn: Any) -> Any:
    hooks = [row[0] for row in conn.execute("SELECT webhook_id FROM webhooks")]
    found = [d for hook in hooks for d in recent_deliveries(conn, hook)]
    return found[0].status if found else None


@asynccontextmanager
async def _node(path: Path, client: FailingClient) -> AsyncIterator[ActorRuntime]:
    config = UserConfig(webhooks=WebhookSettings(("127.0.0.1/32",)))
    async with (
        storage.open_storage(path, clock=CLOCK) as store,
        open_actor_runtime(store, clock=CLOCK, config=config, kinds=(WEBHOOKS,),
                           environ={"HOOK_SECRET": SECRET},
                           options={"webhook.client": client,
                                    # no idle sweep: each sweep would cost a clock jump
                                    "webhook.idle_s": math.inf}) as runtime,
    ):  # fmt: skip
        yield runtime


async def _add_and_emit(runtime: ActorRuntime) -> str:
    """Add a webhook through its actor (spending a real preview), then emit one event."""
    store = runtime.store
    command = Command("c1", "local-user", DIGEST, OP)
    issued = await store.write(lambda c: storage.issue_preview(
        c, actor_id="local-user", operation_id=OP, input_digest=DIGEST, clock=CLOCK,
        node_epoch=store.node_epoch))  # fmt: skip
    proof = Proof(issued.preview_id, issued.proof, CLOCK, store.node_epoch)
    spec = WebhookSpec("http://127.0.0.1:9/in", ("turn.completed",), "HOOK_SECRET")
    hook = webhook_id_for("local-user", "c1")
    added = await runtime[WEBHOOKS].ask(hook, ConfirmChange("add", command, proof, spec=spec))
    assert added.delivery == "new"
    await store.write(lambda c: storage.append_event(
        c, owner_id="session_1", event_type="turn.completed", payload={}, now_ms=CLOCK.wall_ms(),
    ))  # fmt: skip
    return hook


async def _wait_state(runtime: ActorRuntime, hook: str, state: str, attempts: int = 0) -> Any:
    """The newest delivery once it is in `state` with at least `attempts` recorded."""
    for _ in range(MAX_POLLS):
        found = await runtime.store.read(lambda c: recent_deliveries(c, hook))
        newest = found[0].status if found else None
        if newest is not None and newest.state.value == state and newest.attempts >= attempts:
            return found[0]
        await _real_pause()
    raise AssertionError(f"the delivery never read {state}")


async def test_eight_attempts_on_the_schedule_then_failed(
    tmp_path: Path, clock: trio.testing.MockClock
) -> None:
    """A receiver that always fails gets attempts at 0, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h and
    10 h after each failure, all with the same webhook-id; then the delivery is failed."""
    client = FailingClient()
    async with _node(tmp_path / "maia.db", client) as runtime:
        hook = await _add_and_emit(runtime)
        await _drive(clock, runtime, client, len(RETRY_SCHEDULE_MS))
        failed = await _wait_state(runtime, hook, "failed")
    gaps = [b - a for a, b in zip(client.sent_at, client.sent_at[1:], strict=False)]
    assert len(client.sent_at) == len(RETRY_SCHEDULE_MS)
    for gap, step in zip(gaps, RETRY_SCHEDULE_MS[1:], strict=True):
        assert step <= gap < step + 1000, (gap, step)
    assert len(set(client.ids)) == 1
    assert failed.status.attempts == len(RETRY_SCHEDULE_MS)


async def test_retry_after_delays_the_next_attempt(
    tmp_path: Path, clock: trio.testing.MockClock
) -> None:
    """A 429 asking for 10 minutes moves the 5 s retry to 10 minutes."""
    client = FailingClient(429, retry_after_ms=600_000)
    async with _node(tmp_path / "maia.db", client) as runtime:
        await _add_and_emit(runtime)
        await _drive(clock, runtime, client, 2)
    assert 600_000 <= client.sent_at[1] - client.sent_at[0] < 601_000


async def test_a_pending_retry_survives_a_restart(
    tmp_path: Path, clock: trio.testing.MockClock
) -> None:
    """The retry's durable timer outlives the Node run that armed it: after a restart the
    second attempt comes at its original deadline, with the same webhook-id."""
    db = tmp_path / "maia.db"
    first = FailingClient()
    async with _node(db, first) as runtime:
        hook = await _add_and_emit(runtime)
        await _drive(clock, runtime, first, 1)
        await _wait_state(runtime, hook, "pending", attempts=1)  # recorded; the retry waits
    second = FailingClient()
    async with _node(db, second) as runtime:
        await _drive(clock, runtime, second, 1, before=1)
    assert 5000 <= second.sent_at[0] - first.sent_at[0] < 7000
    assert second.ids == first.ids
