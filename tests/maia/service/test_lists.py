"""Lists and lookups: paging by signed cursor, filters, and refusals of unknown targets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from maia.protocol import MaiaError
from maia.service import ServiceContext
from maia.service._projects import project_add
from maia.service._records import receipt_list
from maia.service._sessions import session_create, session_list
from maia.service._turns import turn_cancel, turn_queue_list, turn_send, turn_show

from ._helpers import params


async def test_session_list_pages_and_filters(ctx: ServiceContext, tmp_path: Path) -> None:
    """Five Sessions page 2+2+1 newest first; label filters need every label; a cursor of
    another filter is invalid_cursor."""
    (tmp_path / "app").mkdir()
    project = await project_add(
        ctx, params("project.add", {"commandId": "p", "rootPath": str(tmp_path / "app")})
    )
    ids = []
    for n in range(5):
        labels = ["team=a", "urgent"] if n % 2 == 0 else ["team=a"]
        created = await session_create(
            ctx,
            params(
                "session.create",
                {"commandId": f"s{n}", "projectId": project.project.project_id,
                 "labels": labels},
            ),
        )  # fmt: skip
        ids.append(created.session.session_id)
    seen: list[str] = []
    cursor = None
    for _ in range(3):
        body: dict[str, object] = {"limit": 2}
        if cursor is not None:
            body["cursor"] = cursor
        page = await session_list(ctx, params("session.list", body))
        seen += [s.session_id for s in page.sessions]
        cursor = page.next_cursor
    assert seen == ids[::-1]
    assert cursor is None
    urgent = await session_list(ctx, params("session.list", {"labels": ["urgent", "team=a"]}))
    assert {s.session_id for s in urgent.sessions} == {ids[0], ids[2], ids[4]}
    first = await session_list(ctx, params("session.list", {"limit": 1}))
    with pytest.raises(MaiaError) as caught:
        await session_list(
            ctx, params("session.list", {"limit": 1, "labels": ["x"], "cursor": first.next_cursor})
        )
    assert caught.value.code == "invalid_cursor"
    unsettled = await session_list(ctx, params("session.list", {"settled": True}))
    assert unsettled.sessions == ()  # created just now: not idle for 5 minutes yet


async def test_unknown_targets_are_not_found(ctx: ServiceContext) -> None:
    """Sends, shows, queue lists and cancels of things that do not exist: resource_not_found,
    and nothing is written."""
    calls: list[tuple[Any, str, dict[str, object]]] = [
        (turn_send, "turn.send", {"commandId": "c1", "sessionId": "session_x", "text": "hi"}),
        (turn_show, "turn.show", {"turnId": "turn_x"}),
        (turn_queue_list, "turn.queue.list", {"sessionId": "session_x"}),
        (turn_cancel, "turn.cancel", {"commandId": "c2", "turnId": "turn_x",
                                      "expectedRevision": 1}),
    ]  # fmt: skip
    for handler, op_id, body in calls:
        with pytest.raises(MaiaError) as caught:
            await handler(ctx, params(op_id, body))
        assert caught.value.code == "resource_not_found"
    receipts = await receipt_list(ctx, params("receipt.list", {}))
    assert receipts.receipts == ()
