"""The event envelope and worker diagnostics over a real Node (in this trio run) with real
echo workers: a turn.send's commandId correlates every event of its turn and its receipt, a
worker event is caused by the turn's dispatch, observation records say the same, the
summary frame sits between the start and the live part, and a flood of diagnostics reaches
the stream as diagnostic records and the journal as one gap event with the dropped count."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio

from maia.client import MaiaClient, observe_events, open_client, read_token
from maia.node import NodeConfig, NodeHome, NodeRunning, serve_node
from worker_bridge import MAX_DIAGNOSTIC_RECORDS

from ..._sessions import new_session, wait_turn

CONFIG = '{"executors": {"echo": {"kind": "echo"}}}'
WORKER_EVENTS = ("turn.started", "item.completed", "turn.completed")


@attrs.frozen
class Live:
    running: NodeRunning
    client: MaiaClient


@pytest.fixture
async def live(nursery: trio.Nursery, tmp_path: Path) -> AsyncIterator[Live]:
    """A Node with the echo executor, and an SDK client connected to it."""
    root = tmp_path / "home"
    root.mkdir(mode=0o700)
    (root / "config.jsonc").write_text(CONFIG)
    home = NodeHome(root)
    running: NodeRunning = await nursery.start(serve_node, NodeConfig(home))
    async with open_client(running.url, token=read_token(home.token_path)) as client:
        yield Live(running, client)


async def _session_events(client: MaiaClient, session_id: str) -> list[Any]:
    position = {"kind": "sequence", "ownerType": "session", "ownerId": session_id,
                "afterSequence": 0}  # fmt: skip
    page = await client.call("events.read", position=position, limit=500)
    assert page.status == "page"
    return list(page.events)


def _of_turn(events: list[Any], turn_id: str) -> list[Any]:
    return [e for e in events if isinstance(e.payload, dict) and e.payload.get("turnId") == turn_id]


async def test_a_turn_sends_correlation_and_its_dispatch_as_cause(
    live: Live, tmp_path: Path
) -> None:
    """Each turn's events carry its turn.send commandId as correlation (the second turn's
    too, though the first one's end dispatched it); the receipt names the same; turn.started,
    item.completed and turn.completed are caused by that turn's dispatch, on one attempt and
    one activation; the worker starting for the first turn is correlated with it too."""
    session_id = await new_session(live.client, tmp_path / "p", "env1")
    first = await live.client.call("turn.send", command_id="corr-first", session_id=session_id,
                                   text="/sleep 500 one")  # fmt: skip
    second = await live.client.call("turn.send", command_id="corr-second",
                                    session_id=session_id, text="two")  # fmt: skip
    for sent in (first, second):
        await wait_turn(live.client, sent.turn.turn_id, "completed")
    events = await _session_events(live.client, session_id)
    attempts = set()
    for sent, command in ((first, "corr-first"), (second, "corr-second")):
        mine = _of_turn(events, sent.turn.turn_id)
        assert {e.event_type for e in mine} >= {"turn.queued", "turn.dispatching", *WORKER_EVENTS}
        assert {e.correlation_id for e in mine} == {command}
        receipt = await live.client.call("receipt.get", command_id=command)
        assert receipt.correlation_id == command
        assert set(receipt.receipt.event_ids) <= {e.event_id for e in mine} | {
            e.event_id for e in events if e.correlation_id == command
        }
        queued = next(e for e in mine if e.event_type == "turn.queued")
        assert (queued.causation_id, queued.command_id) == (command, command)
        assert queued.actor_id == "local-user"
        dispatch = next(e for e in mine if e.event_type == "turn.dispatching")
        assert dispatch.activation_id is not None
        assert dispatch.attempt_id is not None
        for event in (e for e in mine if e.event_type in WORKER_EVENTS):
            assert event.causation_id == dispatch.event_id, event.event_type
            assert event.activation_id == dispatch.activation_id
            assert event.attempt_id == dispatch.attempt_id
        attempts.add(dispatch.attempt_id)
        assert all(e.schema_version == "maia.event.v1" for e in mine)
    assert len(attempts) == 1  # one warm worker ran both turns
    started = [e for e in events if e.event_type in ("session.starting", "session.running")]
    assert [e.correlation_id for e in started] == ["corr-first", "corr-first"]
    activations = {e.activation_id for e in events if e.event_type == "turn.dispatching"}
    assert len(activations) == 2


async def test_observation_records_carry_the_envelope_and_a_summary_follows_the_start(
    live: Live, tmp_path: Path
) -> None:
    """A snapshot's records carry the journal's causation, correlation, attempt, activation
    and command; a summary frame follows the snapshot (counts, bounds, cursor), and a resume
    with its cursor starts with a replay summary."""
    session_id = await new_session(live.client, tmp_path / "p", "env2")
    sent = await live.client.call("turn.send", command_id="obs-1", session_id=session_id,
                                  text="hello")  # fmt: skip
    await wait_turn(live.client, sent.turn.turn_id, "completed")
    journal = {e.event_id: e for e in await _session_events(live.client, session_id)}
    query = {"sessionIds": [session_id], "limit": 100}
    frames: list[Any] = []
    with trio.fail_after(30):
        async with observe_events(live.client, query) as feed:
            async for frame in feed:
                frames.append(frame)
                if frame.type == "summary":
                    break
    assert [f.type for f in frames][-2:] == ["snapshot", "summary"]
    records = [r for f in frames for r in f.records]
    assert {r["observationId"] for r in records} == set(journal)
    for record in records:
        event = journal[record["observationId"]]
        assert record["causationId"] == event.causation_id
        assert record["correlationId"] == event.correlation_id
        assert record["attemptId"] == event.attempt_id
        assert record["activationId"] == event.activation_id
        assert record["commandId"] == event.command_id
    summary = frames[-1].frame
    assert summary["mode"] == "snapshot"
    assert summary["recordCount"] == len(records)
    assert sum(summary["eventTypeCounts"].values()) == len(records)
    assert summary["eventTypeCounts"]["turn.started"] == 1
    assert summary["headPosition"] >= max(r["partitionSequence"] for r in records)
    assert summary["oldestRetainedPosition"] == 1
    assert summary["watermark"]["coverage"] == "complete"
    with trio.fail_after(30):
        async with observe_events(live.client, query, cursor=summary["cursor"]) as feed:
            async for frame in feed:
                assert frame.type == "summary"  # nothing to replay: the summary comes first
                assert frame.frame["mode"] == "replay"
                assert frame.frame["recordCount"] == 0
                break


async def test_a_diagnostics_flood_reaches_the_stream_and_journals_one_gap(
    live: Live, tmp_path: Path
) -> None:
    """3,000 diagnostics queued at once: the worker keeps 2,048, which arrive as diagnostic
    observation records (the first saying how many were dropped before it); the Node records
    one authoritative worker.diagnostics.gap event with the dropped count, caused by the
    turn's dispatch."""
    burst = 3000
    dropped = burst - MAX_DIAGNOSTIC_RECORDS
    session_id = await new_session(live.client, tmp_path / "p", "env3")
    query = {"sessionIds": [session_id], "importance": ["diagnostic"],
             "eventTypes": ["worker.diagnostic"], "includeContent": True, "limit": 0}  # fmt: skip
    received: list[dict[str, Any]] = []
    with trio.fail_after(90):
        async with observe_events(live.client, query) as feed:
            await feed.__anext__()  # the (empty) snapshot: subscribed
            sent = await live.client.call("turn.send", command_id="flood-1",
                                          session_id=session_id,
                                          text=f"/diagnostics-burst {burst}")  # fmt: skip
            async for frame in feed:
                received.extend(frame.records)
                if len(received) >= MAX_DIAGNOSTIC_RECORDS:
                    break
        await wait_turn(live.client, sent.turn.turn_id, "completed")
        gaps: list[Any] = []
        while not gaps:  # the recorder writes soon after the batch: bounded by fail_after
            page = await live.client.call("events.read", position={"kind": "start"},
                                          event_types=["worker.diagnostics.gap"])  # fmt: skip
            gaps = list(page.events)
            if not gaps:
                await trio.sleep(0.05)
    assert len(received) == MAX_DIAGNOSTIC_RECORDS
    assert [r["payload"]["index"] for r in received] == list(range(MAX_DIAGNOSTIC_RECORDS))
    assert {r["importance"] for r in received} == {"diagnostic"}
    assert {r["payload"]["turnId"] for r in received} == {sent.turn.turn_id}
    assert received[0]["droppedRecordCountBefore"] == dropped
    assert sum(r["droppedRecordCountBefore"] for r in received) == dropped
    events = await _session_events(live.client, session_id)
    dispatch = next(e for e in _of_turn(events, sent.turn.turn_id)
                    if e.event_type == "turn.dispatching")  # fmt: skip
    assert {r["causationId"] for r in received} == {dispatch.event_id}
    assert {r["attemptId"] for r in received} == {dispatch.attempt_id}
    [gap] = gaps
    assert gap.payload["droppedRecordCount"] == dropped
    assert gap.owner_type == "attempt"
    assert gap.owner_id == gap.attempt_id == dispatch.attempt_id
    assert gap.session_id == session_id
    assert gap.causation_id == dispatch.event_id
    assert gap.correlation_id == "flood-1"
    assert gap.activation_id == dispatch.activation_id


async def test_a_routine_fire_correlates_the_session_and_turn_it_launches(
    live: Live, tmp_path: Path
) -> None:
    """A manual run: the fire's events are caused by the run command and correlated with the
    fire; the Session it creates and every event of its turn carry the fire's correlation,
    as do their receipts."""
    root = tmp_path / "app"
    root.mkdir()
    client = live.client
    project = await client.call("project.add", {"commandId": "p", "rootPath": str(root)})
    body: dict[str, Any] = {
        "commandId": "c1", "name": "r", "schedule": {"cron": "0 0 1 1 *", "timezone": "UTC"},
        "template": {"projectId": project.project.project_id, "prompt": "hi",
                     "executor": "user:echo"},
    }  # fmt: skip
    preview = await client.call("routine.create.preview", body)
    made = await client.call("routine.create.confirm", {**body, "inputDigest":
                             preview.input_digest, "proof": preview.proof})  # fmt: skip
    change = {"commandId": "run-1", "routineId": made.routine.routine_id, "expectedRevision": 1}
    preview = await client.call("routine.run.preview", change)
    await client.call("routine.run.confirm", {**change, "inputDigest": preview.input_digest,
                                              "proof": preview.proof})  # fmt: skip
    with trio.fail_after(60):
        started: list[Any] = []
        while not started:  # the launcher runs after the confirm: bounded by fail_after
            page = await client.call("events.read", position={"kind": "start"},
                                     event_types=["routine.fire_started"])  # fmt: skip
            started = list(page.events)
            if not started:
                await trio.sleep(0.05)
        fire = started[0].payload
        await wait_turn(client, fire["turnId"], "completed")
    fire_id = fire["fireId"]
    everything = await client.call("events.read", position={"kind": "start"}, limit=500)
    fire_events = [
        e for e in everything.events
        if isinstance(e.payload, dict) and e.payload.get("fireId") == fire_id
    ]  # fmt: skip
    assert fire_events
    assert {e.correlation_id for e in fire_events} == {fire_id}
    requested = next(e for e in fire_events if e.event_type == "routine.fire_requested")
    assert requested.causation_id == "run-1"
    session_events = [e for e in everything.events if e.owner_id == fire["sessionId"]]
    wanted = {"session.created", "turn.queued", "turn.started", "turn.completed"}
    assert {e.event_type for e in session_events} >= wanted
    assert {e.correlation_id for e in session_events} == {fire_id}
    for operation in ("session.create", "turn.send"):
        receipts = await client.call("receipt.list", operation_id=operation)
        [receipt] = receipts.receipts
        shown = await client.call("receipt.get", receipt_id=receipt.receipt_id)
        assert shown.correlation_id == fire_id
