"""SIGKILL of a real Node three times while turns complete and their `turn.completed` events
are being delivered to a webhook (docs/webhooks.md "At least once"): after the restarts every
committed `turn.completed` event of the journal reached the receiver, no event reached it
that the journal does not hold, each event travelled under one webhook-id only, and an event
arrived more than once only when its delivery's log shows an attempt cut by the kill
(`unknown`)."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

from maia.client import open_client

from .._node_process import NodeProcess, running_node
from .._sessions import new_session
from ..actors.webhook._receiver import Receiver
from ..actors.webhook.test_node_e2e import CONFIG, SECRET, _add, _show
from ._db import query, wait_rows

COMPLETED = "SELECT event_id FROM events WHERE event_type = 'turn.completed'"
UNENDED = "SELECT count(*) FROM turns WHERE state NOT IN ('completed', 'failed', 'interrupted')"
ROUNDS, TURNS = 3, 6


@pytest.fixture
def node(tmp_path: Path) -> Iterator[NodeProcess]:
    with running_node(tmp_path, CONFIG, {"HOOK_SECRET": SECRET}) as process:
        yield process


async def _deliveries_settled(node: NodeProcess, hook: str, count: int) -> list[dict[str, Any]]:
    """`webhook show`'s deliveries once `count` of them succeeded (bounded)."""
    with trio.fail_after(90):
        while True:
            deliveries = (await _show(node, hook))["deliveries"]
            if sum(d["state"] == "succeeded" for d in deliveries) >= count:
                return list(deliveries)
            await trio.sleep(0.3)


async def test_kills_amid_deliveries_lose_and_invent_nothing(
    node: NodeProcess, tmp_path: Path, nursery: trio.Nursery
) -> None:
    """Three kills amid completing turns; every journal event delivered, under one id each."""
    receiver = Receiver(secret=SECRET)
    await nursery.start(receiver.serve)
    hook = await _add(node, receiver, "turn.completed")
    for round_ in range(ROUNDS):
        async with open_client(home=node.home) as client:
            session_id = await new_session(client, tmp_path / f"proj{round_}", f"s{round_}")
            for n in range(TURNS):
                await client.call("turn.send", command_id=f"t{round_}-{n}",
                                  session_id=session_id, text=f"r{round_} n{n}")  # fmt: skip
            await receiver.wait_for(len(receiver.received) + 1, 60)  # deliveries under way
        node.kill()
        node.start()
    await trio.to_thread.run_sync(lambda: wait_rows(node.home, UNENDED, (), lambda r: r == [(0,)]))
    journal = {row[0] for row in query(node.home, COMPLETED)}
    assert journal, "no turn completed"
    deliveries = await _deliveries_settled(node, hook, len(journal))
    await trio.sleep(2)  # a duplicate in flight would arrive meanwhile
    ids_of: dict[str, set[str]] = defaultdict(set)
    arrivals: dict[str, int] = defaultdict(int)
    for received in receiver.received:
        assert received.verified, received.headers
        event_id = json.loads(received.body)["data"]["eventId"]
        ids_of[event_id].add(received.headers["webhook-id"])
        arrivals[event_id] += 1
    lost, invented = journal - set(ids_of), set(ids_of) - journal
    assert (lost, invented) == (set(), set()), (
        len(journal),
        deliveries,
    )  # nothing lost or invented
    assert all(len(ids) == 1 for ids in ids_of.values()), ids_of
    cut = {d["messageId"] for d in deliveries
           if any(a["outcome"] == "unknown" for a in d["attemptLog"])}  # fmt: skip
    for event_id, count in arrivals.items():
        if count > 1:
            assert ids_of[event_id] <= cut, (event_id, count, deliveries)
