"""The handlers called directly on real storage, a real home and real echo workers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from maia.config import loads_jsonc
from maia.protocol import MaiaError
from maia.service import ServiceContext
from maia.service._projects import project_add, project_list, project_show
from maia.service._records import events_read, receipt_get, receipt_list
from maia.service._reference import reference_resolve
from maia.service._sessions import (
    session_archive,
    session_create,
    session_list,
    session_rename,
    session_show,
    session_stop,
    session_wait,
)
from maia.service._turns import (
    turn_interrupt,
    turn_queue_list,
    turn_send,
    turn_show,
    turn_wait,
)

from ._helpers import params


async def _project(ctx: ServiceContext, tmp_path: Path, name: str = "app") -> str:
    root = tmp_path / name
    root.mkdir(exist_ok=True)
    out = await project_add(
        ctx, params("project.add", {"commandId": f"c-{name}", "rootPath": str(root)})
    )
    return out.project.project_id


async def test_projects_add_list_show_and_mirror(ctx: ServiceContext, tmp_path: Path) -> None:
    """project.add canonicalizes, refuses a duplicate root, mirrors projects.jsonc."""
    project_id = await _project(ctx, tmp_path)
    shown = await project_show(ctx, params("project.show", {"projectId": project_id}))
    assert shown.project.project_key == "app"
    assert shown.project.root_path == str(tmp_path / "app")
    mirror = loads_jsonc(ctx.projects_file.read_text())
    assert [e["projectId"] for e in mirror] == [project_id]
    with pytest.raises(MaiaError) as dup:
        await project_add(
            ctx,
            params(
                "project.add",
                {"commandId": "c-other", "rootPath": str(tmp_path / "app" / ".." / "app")},
            ),
        )
    assert dup.value.code == "invalid_state"
    listed = await project_list(ctx, params("project.list", {}))
    assert [p.project_id for p in listed.projects] == [project_id]


async def test_session_create_is_idempotent(ctx: ServiceContext, tmp_path: Path) -> None:
    """Same commandId and input: one Session, duplicate; other input: idempotency_conflict."""
    project_id = await _project(ctx, tmp_path)
    body = {"commandId": "create-1", "projectId": project_id, "title": "First"}
    one = await session_create(ctx, params("session.create", body))
    two = await session_create(ctx, params("session.create", body))
    assert (one.delivery, two.delivery) == ("new", "duplicate")
    assert one.session.session_id == two.session.session_id
    assert one.receipt_id == two.receipt_id
    with pytest.raises(MaiaError) as conflict:
        await session_create(ctx, params("session.create", {**body, "title": "Other"}))
    assert conflict.value.code == "idempotency_conflict"
    listed = await session_list(ctx, params("session.list", {}))
    assert len(listed.sessions) == 1
    assert listed.sessions[0].state == "idle"


async def test_session_create_refusals(ctx: ServiceContext, tmp_path: Path) -> None:
    """Unknown Project, unknown executor, cwd outside the root: typed refusals, no Session."""
    project_id = await _project(ctx, tmp_path)
    cases = [
        ({"projectId": "project_missing"}, "resource_not_found"),
        ({"projectId": project_id, "executor": "user:nope"}, "configuration_invalid"),
        ({"projectId": project_id, "cwd": "../.."}, "validation_failed"),
    ]
    for number, (body, code) in enumerate(cases):
        with pytest.raises(MaiaError) as caught:
            await session_create(
                ctx, params("session.create", {"commandId": f"bad-{number}", **body})
            )
        assert caught.value.code == code
    assert (await session_list(ctx, params("session.list", {}))).sessions == ()


async def test_turns_wait_show_queue_and_records(ctx: ServiceContext, tmp_path: Path) -> None:
    """Turns run through the handlers; show assembles text; receipts and events are read."""
    project_id = await _project(ctx, tmp_path)
    created = await session_create(
        ctx, params("session.create", {"commandId": "s1", "projectId": project_id})
    )
    session_id = created.session.session_id
    sent = [
        await turn_send(
            ctx, params("turn.send", {"commandId": f"t{n}", "sessionId": session_id, "text": t})
        )
        for n, t in enumerate(["/sleep 300 alpha", "beta", "é" * 100])
    ]
    queue = await turn_queue_list(ctx, params("turn.queue.list", {"sessionId": session_id}))
    assert queue.limit == 8
    assert len(queue.queue[-1].input_preview.encode()) <= 160
    for out in sent:
        done = await turn_wait(ctx, params("turn.wait", {"turnId": out.turn.turn_id}))
        assert done.satisfied
    idle = await session_wait(
        ctx, params("session.wait", {"sessionId": session_id, "activities": ["idle"]})
    )
    assert idle.satisfied  # the worker stays up, with nothing to do
    assert idle.session.latest_turn_state == "completed"
    shown = await turn_show(ctx, params("turn.show", {"turnId": sent[1].turn.turn_id}))
    assert shown.turn.state == "completed"
    assert [i.text for i in shown.items] == ["beta"]
    receipts = await receipt_list(ctx, params("receipt.list", {"operationId": "turn.send"}))
    assert len(receipts.receipts) == 3
    got = await receipt_get(ctx, params("receipt.get", {"commandId": "t1"}))
    assert got.receipt.receipt_id == sent[1].receipt_id
    page = await events_read(
        ctx,
        params(
            "events.read",
            {"position": {"kind": "sequence", "ownerType": "session", "ownerId": session_id,
                          "afterSequence": 0}},
        ),
    )  # fmt: skip
    sequences = [e.owner_sequence for e in page.events]
    assert sequences == list(range(1, len(sequences) + 1))
    assert "turn.completed" in {e.event_type for e in page.events}
    more = await events_read(
        ctx, params("events.read", {"position": {"kind": "cursor", "cursor": page.next_cursor}})
    )
    assert all(e.owner_id == session_id for e in more.events)
    bad = await events_read(
        ctx, params("events.read", {"position": {"kind": "cursor", "cursor": "c1.x.y"}})
    )
    assert bad.status == "invalid_cursor"
    assert bad.reason
    assert not bad.events


async def test_session_wait_rename_stop_archive_resolve(
    ctx: ServiceContext, tmp_path: Path
) -> None:
    """wait answers when satisfied; rename, stop and archive leave receipts; references
    resolve by prefix and title, ambiguity lists candidates."""
    project_id = await _project(ctx, tmp_path)
    ids = []
    for n in range(2):
        created = await session_create(
            ctx,
            params("session.create", {"commandId": f"s{n}", "projectId": project_id,
                                      "title": "Twin"}),
        )  # fmt: skip
        ids.append(created.session.session_id)
    waited = await session_wait(
        ctx, params("session.wait", {"sessionId": ids[0], "states": ["idle"]})
    )
    assert waited.satisfied
    renamed = await session_rename(
        ctx, params("session.rename", {"commandId": "r", "sessionId": ids[0], "title": "Solo"})
    )
    assert renamed.session.title == "Solo"
    assert renamed.session.revision == 2
    resolved = await reference_resolve(ctx, params("reference.resolve", {"reference": "solo"}))
    assert resolved.id == ids[0]
    prefix = ids[1].removeprefix("session_")[:8]
    by_prefix = await reference_resolve(ctx, params("reference.resolve", {"reference": prefix}))
    assert by_prefix.id == ids[1]
    await session_rename(
        ctx, params("session.rename", {"commandId": "r2", "sessionId": ids[0], "title": "Twin"})
    )
    twins = await reference_resolve(ctx, params("reference.resolve", {"reference": "Twin"}))
    assert twins.status == "ambiguous"
    assert {c.id for c in twins.candidates} == set(ids)
    stopped = await session_stop(
        ctx, params("session.stop", {"commandId": "x", "sessionId": ids[0]})
    )
    assert stopped.session.state == "stopped"
    archived = await session_archive(
        ctx,
        params("session.archive", {"commandId": "a", "sessionId": ids[0], "summary": "done"}),
    )
    assert archived.session.archived
    shown = await session_show(ctx, params("session.show", {"sessionId": ids[0]}))
    assert shown.session.summary == "done"
    listed = await session_list(ctx, params("session.list", {}))
    assert [s.session_id for s in listed.sessions] == [ids[1]]


async def test_interrupt_right_after_send(ctx: ServiceContext, tmp_path: Path) -> None:
    """An interrupt sent while the turn is still dispatching (its worker has not said it
    started) waits for it and interrupts it; an interrupt of a queued turn rejects it."""
    project_id = await _project(ctx, tmp_path)
    created = await session_create(
        ctx, params("session.create", {"commandId": "s", "projectId": project_id})
    )
    session_id = created.session.session_id
    warm = await turn_send(
        ctx, params("turn.send", {"commandId": "w", "sessionId": session_id, "text": "warm"})
    )
    await turn_wait(ctx, params("turn.wait", {"turnId": warm.turn.turn_id}))
    first = await turn_send(
        ctx, params("turn.send", {"commandId": "a", "sessionId": session_id,
                                  "text": "/sleep 60000 never"})
    )  # fmt: skip
    second = await turn_send(
        ctx, params("turn.send", {"commandId": "b", "sessionId": session_id, "text": "later"})
    )
    assert first.turn.state == "dispatching"  # the idle worker took it at once
    rejected = await turn_interrupt(
        ctx, params("turn.interrupt", {"commandId": "i2", "turnId": second.turn.turn_id})
    )
    assert rejected.turn.failure_reason == "turn_rejected"
    await turn_interrupt(
        ctx, params("turn.interrupt", {"commandId": "i1", "turnId": first.turn.turn_id})
    )
    done = await turn_wait(ctx, params("turn.wait", {"turnId": first.turn.turn_id}))
    assert done.turn.state == "interrupted"


async def test_concurrent_sends_batch_in_order(ctx: ServiceContext, tmp_path: Path) -> None:
    """Sends racing for one Session share a transaction yet keep their own outcome: order
    as sent, a retried commandId answers duplicate, one with other input conflicts, the
    ninth pending is turn_queue_full; all the queued ones complete in order."""
    project_id = await _project(ctx, tmp_path)
    created = await session_create(
        ctx, params("session.create", {"commandId": "s", "projectId": project_id})
    )
    session_id = created.session.session_id
    bodies = [{"commandId": f"t{n}", "sessionId": session_id, "text": f"n{n}"} for n in range(8)]
    bodies += [
        {"commandId": "t3", "sessionId": session_id, "text": "n3"},  # a retry: duplicate
        {"commandId": "t4", "sessionId": session_id, "text": "other"},  # conflict
        {"commandId": "t9", "sessionId": session_id, "text": "ninth"},  # queue full
    ]
    answers: list[Any] = [None] * len(bodies)

    async def send(index: int) -> None:
        try:
            answers[index] = await turn_send(ctx, params("turn.send", bodies[index]))
        except MaiaError as error:
            answers[index] = error.code

    async with trio.open_nursery() as nursery:
        for index in range(len(bodies)):
            nursery.start_soon(send, index)
            await trio.lowlevel.checkpoint()  # they join in this order
    assert [a.position for a in answers[:8]] == list(range(8))
    assert answers[8].delivery == "duplicate"
    assert answers[8].turn.turn_id == answers[3].turn.turn_id
    assert answers[9:] == ["idempotency_conflict", "turn_queue_full"]
    texts = []
    for answer in answers[:8]:
        done = await turn_wait(ctx, params("turn.wait", {"turnId": answer.turn.turn_id}))
        texts.append(done.turn.output_text)
    assert texts == [f"n{n}" for n in range(8)]
