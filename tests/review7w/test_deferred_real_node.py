"""s7-review5: turns through a real Node (real loopback API, real echo worker processes): a
short turn (start and end in one commit), a slow one, a worker crash right after its start,
an interrupt racing the end, a turn after the crash. Each turn's stored row and its journal
events keep the spec's turn transitions: revisions 1.. without a gap, the row at its last
event's state and revision, started_ms set exactly when turn.started was journaled and never
after finished_ms; turn.wait, turn.show and session.show agree with the row."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import orjson
import trio

from maia.client import open_client
from maia.core import new_id
from maia.node import NodeConfig, NodeHome, serve_node

# The spec's turn transitions (state, event type -> state), as the journal shows them.
_NEXT = {
    (None, "turn.queued"): "queued",
    ("queued", "turn.dispatching"): "dispatching",
    ("queued", "turn.failed"): "failed",
    ("dispatching", "turn.started"): "running",
    ("dispatching", "turn.requeued"): "queued",
    ("dispatching", "turn.failed"): "failed",
    ("running", "turn.completed"): "completed",
    ("running", "turn.failed"): "failed",
    ("running", "turn.interrupt_requested"): "running",
    ("running", "turn.interrupted"): "interrupted",
}
_ENDED = ("completed", "failed", "interrupted")


async def _project(client: Any, root: str) -> str:
    added = await client.request("project.add", {"commandId": new_id("command"),
                                                 "rootPath": root})  # fmt: skip
    return str(added["project"]["projectId"])


async def _session(client: Any, root: str, title: str) -> str:
    """A new Session, titled `title`, of a new project at `root`; its id."""
    created = await client.request("session.create", {
        "commandId": new_id("command"), "title": title,
        "projectId": await _project(client, root)})  # fmt: skip
    return str(created["session"]["sessionId"])


async def _send(client: Any, session: str, text: str) -> str:
    sent = await client.request("turn.send", {"commandId": new_id("command"),
                                              "sessionId": session, "text": text})  # fmt: skip
    return str(sent["turn"]["turnId"])


async def _wait(client: Any, turn_id: str, states: tuple[str, ...] = _ENDED) -> dict[str, Any]:
    with trio.fail_after(120):
        while True:
            answer = await client.request("turn.wait", {"turnId": turn_id,
                                                        "states": list(states),
                                                        "waitMilliseconds": 4000})  # fmt: skip
            if answer["satisfied"]:
                return dict(answer["turn"])


def _journal(path: Path, turn_id: str) -> tuple[Any, list[tuple[str, int]]]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        row = conn.execute(
            "SELECT state, revision, started_ms, finished_ms FROM turns WHERE turn_id = ?",
            (turn_id,),
        ).fetchone()
        events = [  # the turn's own revision: the event's aggregateRevision is its Session's
            (kind, body["turnRevision"])
            for kind, body in (
                (kind, orjson.loads(payload))
                for kind, payload in conn.execute(
                    "SELECT event_type, payload FROM events"
                    " WHERE event_type LIKE 'turn.%' ORDER BY position"
                )
            )
            if body.get("turnId") == turn_id
        ]
    finally:
        conn.close()
    return row, events


def _check(path: Path, turn_id: str, shown: dict[str, Any]) -> list[str]:
    """The row and its journal under the spec's transitions; the event kinds."""
    row, events = _journal(path, turn_id)
    state = None
    for kind, _ in events:
        assert (state, kind) in _NEXT, (turn_id, state, kind, events)
        state = _NEXT[state, kind]
    assert [revision for _, revision in events] == list(range(1, len(events) + 1)), events
    assert row[:2] == (state, len(events)), (row, events)
    assert (row[2] is not None) == any(kind == "turn.started" for kind, _ in events), row
    assert row[3] is not None
    assert row[2] is None or row[2] <= row[3]
    assert (shown["state"], shown["revision"]) == row[:2]
    return [kind for kind, _ in events]


async def test_turns_through_a_real_node_keep_the_spec_transitions(tmp_path: Path) -> None:
    """Short, slow, crashed, interrupted and after-crash turns: rows and journal per spec."""
    home = NodeHome(tmp_path / "home")
    (tmp_path / "project").mkdir()
    root = str((tmp_path / "project").resolve())
    async with trio.open_nursery() as nursery:
        running = await nursery.start(serve_node, NodeConfig(home))
        async with open_client(home=home.root) as client:
            session = await _session(client, root, "deferred")
            turns = {}
            for name, text in (("short", "Hi!"), ("slow", "/sleep 300 slow"),
                               ("crash", "/crash"), ("after", "again")):  # fmt: skip
                turns[name] = await _send(client, session, text)
                ended = await _wait(client, turns[name])
                shown = (await client.request("turn.show", {"turnId": turns[name]}))["turn"]
                assert ended == shown  # the actor's own view is the row read back
                assert (ended["state"] == "failed") == (name == "crash"), ended
            # an interrupt racing the end: sent once the turn runs, the worker asleep
            turns["interrupted"] = await _send(client, session, "/sleep 2000 late")
            await _wait(client, turns["interrupted"], ("running",))
            await client.request("turn.interrupt", {"commandId": new_id("command"),
                                                    "turnId": turns["interrupted"]})  # fmt: skip
            await _wait(client, turns["interrupted"])
            # many short turns back to back: most starts go with their end's commit
            burst = [await _send(client, session, f"burst {i}") for i in range(8)]
            for turn_id in burst:
                await _wait(client, turn_id)
            views = {
                t: (await client.request("turn.show", {"turnId": t}))["turn"]
                for t in [*turns.values(), *burst]
            }
            show = await client.request("session.show", {"sessionId": session})
        assert running.url.startswith("ws://127.0.0.1")
        nursery.cancel_scope.cancel()
    path = home.database_path
    kinds = {name: _check(path, t, views[t]) for name, t in turns.items()}
    for turn_id in burst:
        assert _check(path, turn_id, views[turn_id])[-2:] == ["turn.started", "turn.completed"]
    assert kinds["short"] == ["turn.queued", "turn.dispatching", "turn.started",
                              "turn.completed"]  # fmt: skip
    assert kinds["crash"][-1] == "turn.failed"
    assert kinds["interrupted"][-2:] == ["turn.interrupt_requested", "turn.interrupted"]
    assert show["session"]["state"] not in ("failed",), show
