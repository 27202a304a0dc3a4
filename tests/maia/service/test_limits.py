"""Every enforced CapacityLimitsV1 dimension, reached through the API of a real Node (served in
the test's trio run on a loopback port, the SDK over a real WebSocket) with real echo and
exec workers; the limits come from admitted configuration files, and an admission applies
to new work without a restart."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio

from maia.client import open_client
from maia.node import NodeConfig, NodeHome, serve_node
from maia.protocol import MaiaError
from maia.service._admitted import FILES_FRESH_MS

from ..._sessions import wait_turn

SLEEP = "/sleep 120000 "  # an echo turn that runs until interrupted (or its wall time)
CONFIRM_KEYS = ("preview_id", "proof", "input_digest", "manifest_digest", "expected_revision")


@attrs.frozen
class Api:
    """The SDK client of a live Node, with its home and a private folder for Projects."""

    sdk: Any
    home: Path
    work: Path

    async def call(self, op_id: str, **fields: Any) -> Any:
        return await self.sdk.call(op_id, **fields)


@pytest.fixture
async def client(nursery: trio.Nursery, tmp_path: Path) -> AsyncIterator[Api]:
    home = NodeHome(tmp_path / "home")
    await nursery.start(serve_node, NodeConfig(home))
    (tmp_path / "work").mkdir(mode=0o700)
    async with open_client(home=home.root) as connected:
        yield Api(connected, home.root, tmp_path / "work")


def write_private(path: Path, text: str) -> None:
    path.parent.mkdir(mode=0o700, exist_ok=True)
    path.write_text(text)
    os.chmod(path, 0o600)


def write_user(client: Any, capacity: dict[str, Any]) -> None:
    write_private(client.home / "config.jsonc", json.dumps({"swarm": {"capacity": capacity}}))


def write_project(client: Any, key: str, body: dict[str, Any]) -> None:
    document = {"schemaVersion": "maia.project-config.v1", "projectKey": key, **body}
    write_private(client.work / key / ".maia" / "config.jsonc", json.dumps(document))


async def admit(client: Any, project_id: str | None = None) -> None:
    scope = {} if project_id is None else {"project_id": project_id}
    preview = await client.call("config.admit.preview", **scope)
    confirm = {key: getattr(preview, key) for key in CONFIRM_KEYS}
    command = f"admit-{preview.manifest_digest[-12:]}"
    await client.call("config.admit.confirm", **scope, **confirm, command_id=command)


async def add_project(client: Any, key: str) -> str:
    await trio.Path(client.work / key).mkdir(mode=0o700, exist_ok=True)
    added = await client.call(
        "project.add", command_id=f"p-{key}", root_path=str(client.work / key), project_key=key
    )
    return str(added.project.project_id)


async def new_session(client: Any, project_id: str, name: str, **fields: Any) -> str:
    created = await client.call("session.create", command_id=name, project_id=project_id, **fields)
    return str(created.session.session_id)


async def send(client: Any, session_id: str, text: str, command: str) -> str:
    sent = await client.call("turn.send", command_id=command, session_id=session_id, text=text)
    return str(sent.turn.turn_id)


async def queue_wait(client: Any, session_id: str) -> Any:
    """The queue once its first turn waits for a limit (bounded: 60 s)."""
    with trio.fail_after(60):
        while True:
            queue = await client.call("turn.queue.list", session_id=session_id)
            if queue.waiting is not None:
                return queue
            await trio.sleep(0.05)


async def interrupt(client: Any, turn_id: str) -> None:
    await client.call("turn.interrupt", command_id=f"stop-{turn_id}", turn_id=turn_id)


async def test_third_turn_waits_for_two_concurrent_activations(client: Any) -> None:
    """With maxConcurrentActivations 2 admitted, a third Session's turn waits (turn.queue.list
    says why) while two run, and runs when one of them ends."""
    write_user(client, {"maxConcurrentActivations": 2})
    await admit(client)
    project = await add_project(client, "app")
    sessions = [await new_session(client, project, f"s{i}") for i in range(3)]
    first = await send(client, sessions[0], SLEEP + "a", "t0")
    second = await send(client, sessions[1], SLEEP + "b", "t1")
    await wait_turn(client, first, "running")
    await wait_turn(client, second, "running")
    third = await send(client, sessions[2], "third", "t2")
    queue = await queue_wait(client, sessions[2])
    assert (queue.waiting.limit, queue.waiting.scope, queue.waiting.value) == (
        "maxConcurrentActivations",
        "node",
        2,
    )
    assert [entry.turn_id for entry in queue.queue] == [third]
    assert (await client.call("turn.show", turn_id=first)).turn.state == "running"
    await interrupt(client, first)
    done = await wait_turn(client, third, "completed", "failed")
    assert done.state == "completed"
    await interrupt(client, second)
    await wait_turn(client, second, "interrupted")


async def test_project_limits_narrow_the_users(client: Any) -> None:
    """A Project's maxConcurrentActivations 1 holds its second Session's turn (scope project)
    while a Session of another Project runs at once."""
    narrow = await add_project(client, "narrow")
    other = await add_project(client, "other")
    write_project(client, "narrow", {"limits": {"maxConcurrentActivations": 1}})
    await admit(client, narrow)
    a = await new_session(client, narrow, "a")
    b = await new_session(client, narrow, "b")
    c = await new_session(client, other, "c")
    running = await send(client, a, SLEEP + "a", "ta")
    await wait_turn(client, running, "running")
    held = await send(client, b, "b", "tb")
    free = await send(client, c, "c", "tc")
    assert (await wait_turn(client, free, "completed", "failed")).state == "completed"
    queue = await queue_wait(client, b)
    assert (queue.waiting.scope, queue.waiting.value) == ("project", 1)
    await interrupt(client, running)
    assert (await wait_turn(client, held, "completed", "failed")).state == "completed"


async def test_live_sessions_limit_refuses_a_second_worker(client: Any) -> None:
    """With a Project's maxLiveSessions 1, a second Session's turn is refused `saturated`
    (naming the Project's limit) while the first one's worker runs a turn."""
    project = await add_project(client, "app")
    write_project(client, "app", {"limits": {"maxLiveSessions": 1}})
    await admit(client, project)
    a = await new_session(client, project, "a")
    b = await new_session(client, project, "b")
    running = await send(client, a, SLEEP + "a", "ta")
    await wait_turn(client, running, "running")
    with pytest.raises(MaiaError) as caught:
        await send(client, b, "b", "tb")
    assert caught.value.code == "saturated"
    assert (caught.value.details["limit"], caught.value.details["scope"]) == (1, "project")
    await interrupt(client, running)
    await wait_turn(client, running, "interrupted")


async def test_admitted_queue_limit_applies_to_new_work_without_restart(client: Any) -> None:
    """maxQueuedMessages 2 refuses a third pending turn; editing the file to 3 changes
    nothing; admitting it lets the third in, on the same running Node."""
    project = await add_project(client, "app")
    write_project(client, "app", {"limits": {"maxQueuedMessages": 2}})
    await admit(client, project)
    session = await new_session(client, project, "s")
    running = await send(client, session, SLEEP + "a", "t0")
    await send(client, session, "b", "t1")
    with pytest.raises(MaiaError) as caught:
        await send(client, session, "c", "t2")
    assert (caught.value.code, caught.value.details["limit"]) == ("turn_queue_full", 2)
    write_project(client, "app", {"limits": {"maxQueuedMessages": 3}})
    with pytest.raises(MaiaError) as again:
        await send(client, session, "c", "t3")
    assert again.value.code == "turn_queue_full"
    await admit(client, project)
    third = await send(client, session, "c", "t4")
    assert (await client.call("turn.queue.list", session_id=session)).limit == 3
    await interrupt(client, running)
    assert (await wait_turn(client, third, "completed", "failed")).state == "completed"


async def test_wall_time_limit_ends_an_echo_turn(client: Any) -> None:
    """maxWallTimeMsPerActivation applies to every executor: an echo turn that sleeps past
    1000 ms fails `wall_time_exceeded`."""
    project = await add_project(client, "app")
    write_project(client, "app", {"limits": {"maxWallTimeMsPerActivation": 1000}})
    await admit(client, project)
    session = await new_session(client, project, "s")
    turn = await send(client, session, SLEEP + "late", "t0")
    ended = await wait_turn(client, turn, "completed", "failed", "interrupted")
    assert (ended.state, ended.failure_reason) == ("failed", "wall_time_exceeded")


async def test_project_executor_output_is_bounded_by_max_output_bytes(client: Any) -> None:
    """A Project's own exec executor (its defaults.executorRef) resolves, a command printing
    5000 bytes fails under maxOutputBytesPerTool 1000 (within it, it completes), and each
    activation records the admitted snapshot it ran under."""
    project = await add_project(client, "app")
    program = [sys.executable, "-c", "import sys; sys.stdout.write('x' * int(input()))"]
    write_project(
        client,
        "app",
        {
            "defaults": {"executorRef": "project:self/count"},
            "executors": {"count": {"kind": "exec", "argv": program}},
            "limits": {"maxOutputBytesPerTool": 1000},
        },
    )
    await admit(client, project)
    session = await new_session(client, project, "s")
    shown = await client.call("session.show", session_id=session)
    assert shown.session.executor == f"project:{project}/count"
    small = await send(client, session, "999", "t0")
    assert (await wait_turn(client, small, "completed", "failed")).state == "completed"
    large = await send(client, session, "5000", "t1")
    assert (await wait_turn(client, large, "completed", "failed")).state == "failed"
    items = (await client.call("turn.show", turn_id=large)).items
    assert any("output exceeds 1000 bytes" in (item.text or "") for item in items)
    shown_config = await client.call("config.show", project_id=project)
    admitted = shown_config.project.snapshot_id
    position = {"kind": "sequence", "ownerType": "session", "ownerId": session,
                "afterSequence": 0}  # fmt: skip
    page = await client.sdk.call("events.read", {"position": position, "limit": 500})
    dispatched = [e.payload for e in page.events if e.event_type == "turn.dispatching"]
    assert [d.get("projectSnapshotId") for d in dispatched] == [admitted, admitted]
    assert all("userSnapshotId" not in d for d in dispatched)  # the user scope never admitted


async def test_an_executors_own_max_output_bytes_applies_when_smaller(client: Any) -> None:
    """An exec executor's `maxOutputBytes` 500 bounds a run under a Project limit of 100000
    (600 bytes fail naming 500); the smaller of the two wins, so 400 bytes complete."""
    project = await add_project(client, "app")
    program = [sys.executable, "-c", "import sys; sys.stdout.write('x' * int(input()))"]
    write_project(
        client,
        "app",
        {
            "defaults": {"executorRef": "project:self/count"},
            "executors": {"count": {"kind": "exec", "argv": program, "maxOutputBytes": 500}},
            "limits": {"maxOutputBytesPerTool": 100_000},
        },
    )
    await admit(client, project)
    session = await new_session(client, project, "s")
    small = await send(client, session, "400", "t0")
    assert (await wait_turn(client, small, "completed", "failed")).state == "completed"
    large = await send(client, session, "600", "t1")
    assert (await wait_turn(client, large, "completed", "failed")).state == "failed"
    items = (await client.call("turn.show", turn_id=large)).items
    assert any("output exceeds 500 bytes" in (item.text or "") for item in items)


async def test_allowed_executors_refuse_session_create(client: Any) -> None:
    """session.create with an executor the Project's allowedExecutors does not list is
    refused configuration_invalid, naming it and the allowed ones; nothing is created."""
    project = await add_project(client, "app")
    write_project(
        client,
        "app",
        {
            "allowedExecutors": ["project:self/cat"],
            "executors": {"cat": {"kind": "exec", "argv": ["/bin/cat"]}},
        },
    )
    await admit(client, project)
    with pytest.raises(MaiaError) as caught:
        await new_session(client, project, "s", executor="builtin:echo")
    assert caught.value.code == "configuration_invalid"
    assert caught.value.details["executor"] == "builtin:echo"
    assert caught.value.details["allowed"] == [f"project:{project}/cat"]
    listed = await client.call("session.list", project_id=project)
    assert listed.sessions == ()


async def test_node_status_reports_a_file_that_differs(client: Any) -> None:
    """node.status lists the user file once it is edited after its admission (differs), and
    no longer once the edit is admitted."""
    write_user(client, {"maxLiveSessions": 3})
    await admit(client)
    assert (await client.call("node.status")).config_files == ()
    write_user(client, {"maxLiveSessions": 4})
    await trio.sleep(FILES_FRESH_MS / 1000 + 0.05)  # node.status sees an edit within this
    files = (await client.call("node.status")).config_files
    assert [(f.scope, f.file) for f in files] == [("user", "differs")]
    await admit(client)
    assert (await client.call("node.status")).config_files == ()
