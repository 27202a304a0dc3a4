"""reference.resolve for the kinds added at registry 0.13.0 (routine, webhook, approval), on
real storage: approvals have no name and no Project, so an ID prefix names them (bare or
`approval_…`), several matches are ambiguous, and a projectId scope is ignored."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from maia.protocol import MaiaError
from maia.service import ServiceContext
from maia.service._projects import project_add
from maia.service._reference import reference_resolve
from maia.service._sessions import session_create
from maia.service._turns import turn_send

from ._helpers import params

IDS = ("approval_abcd" + "1" * 28, "approval_abcd" + "2" * 28, "approval_" + "e" * 32)


async def _approvals(ctx: ServiceContext, tmp_path: Path) -> str:
    """Three approval rows on a real Session's turn; the Project's ID."""
    root = tmp_path / "app"
    root.mkdir()
    added = await project_add(ctx, params("project.add", {"commandId": "p", "rootPath": str(root)}))
    project_id = added.project.project_id
    body = {"commandId": "s", "projectId": project_id}
    made = await session_create(ctx, params("session.create", body))
    session_id = made.session.session_id
    sent = await turn_send(ctx, params("turn.send", {"commandId": "t", "sessionId": session_id,
                                                     "text": "hi"}))  # fmt: skip

    def insert(conn: sqlite3.Connection) -> None:
        for n, approval_id in enumerate(IDS):
            conn.execute(
                "INSERT INTO approvals (approval_id, session_id, turn_id, call_id, kind, summary,"
                " options, can_remember, state, revision, created_ms)"
                " VALUES (?, ?, ?, ?, 'command', 'run ls', '[]', 0, 'pending', 1, ?)",
                (approval_id, session_id, sent.turn.turn_id, f"call-{n}", n),
            )

    await ctx.store.write(insert)
    return project_id


async def test_approvals_resolve_by_id_prefix(ctx: ServiceContext, tmp_path: Path) -> None:
    """A unique prefix resolves (with or without `approval_`), a shared one lists both
    candidates, an unknown one is resource_not_found; projectId narrows nothing."""
    project_id = await _approvals(ctx, tmp_path)

    async def resolve(reference: str, **extra: str) -> object:
        body = {"reference": reference, "kind": "approval", **extra}
        return await reference_resolve(ctx, params("reference.resolve", body))

    for text in ("eeee", "approval_eeee"):
        assert (await resolve(text)).id == IDS[2]  # type: ignore[attr-defined]
    both = await resolve("abcd", projectId=project_id)
    assert both.status == "ambiguous"  # type: ignore[attr-defined]
    assert {c.id for c in both.candidates} == set(IDS[:2])  # type: ignore[attr-defined]
    with pytest.raises(MaiaError) as missing:
        await resolve("ffff")
    assert missing.value.code == "resource_not_found"


async def test_a_title_in_other_letters_resolves_ignoring_case(
    ctx: ServiceContext, tmp_path: Path
) -> None:
    """A Session titled `Émile Zola` is named by `émile zola` and `ÉMILE ZOLA` too (case
    is ignored beyond ASCII, as for `Hello`/`hello`); a different name still names nothing."""
    root = tmp_path / "letters"
    root.mkdir()
    project = {"commandId": "pl", "rootPath": str(root)}
    added = await project_add(ctx, params("project.add", project))
    body = {"commandId": "sl", "projectId": added.project.project_id, "title": "Émile Zola"}
    session_id = (await session_create(ctx, params("session.create", body))).session.session_id

    async def resolve(reference: str) -> object:
        body = {"reference": reference, "kind": "session"}
        return await reference_resolve(ctx, params("reference.resolve", body))

    for text in ("Émile Zola", "émile zola", "ÉMILE ZOLA", "émile ZOLA"):
        assert (await resolve(text)).id == session_id  # type: ignore[attr-defined]
    with pytest.raises(MaiaError) as missing:
        await resolve("émile zolà")
    assert missing.value.code == "resource_not_found"
