"""An `invalid_cursor` refusal names the field it refuses (`details.path == "cursor"`), as
other refusals name theirs: a cursor that cannot be read, one of another filter, one whose
signature does not verify."""

from __future__ import annotations

from pathlib import Path

import pytest

from maia.protocol import MaiaError
from maia.service import ServiceContext
from maia.service._projects import project_add
from maia.service._sessions import session_create, session_list

from ._helpers import params


async def _refused(ctx: ServiceContext, body: dict[str, object]) -> MaiaError:
    with pytest.raises(MaiaError) as caught:
        await session_list(ctx, params("session.list", body))
    return caught.value


async def test_every_invalid_cursor_names_the_cursor_field(
    ctx: ServiceContext, tmp_path: Path
) -> None:
    """Unreadable, another filter's, and a tampered cursor: each invalid_cursor, path cursor."""
    (tmp_path / "app").mkdir()
    project = await project_add(
        ctx, params("project.add", {"commandId": "p", "rootPath": str(tmp_path / "app")})
    )
    for n in range(2):
        await session_create(ctx, params("session.create", {
            "commandId": f"s{n}", "projectId": project.project.project_id}))  # fmt: skip
    first = await session_list(ctx, params("session.list", {"limit": 1}))
    assert first.next_cursor is not None
    head, _, signature = first.next_cursor.rpartition(".")
    tampered = f"{head}.{'A' if signature[:1] != 'A' else 'B'}{signature[1:]}"
    cases = [
        {"limit": 1, "cursor": "bm90LWEtY3Vyc29y"},
        {"limit": 1, "labels": ["x"], "cursor": first.next_cursor},
        {"limit": 1, "cursor": tampered},
    ]
    for body in cases:
        refused = await _refused(ctx, body)
        assert refused.code == "invalid_cursor", body
        assert refused.details.get("path") == "cursor", body
