"""session.list and receipt.list pages under the 1 MiB frame, on real storage with the real
Session runtime: a page is sized by `limit` (100), and 100 archived Sessions with 16 KiB
summaries (a newline is two bytes as JSON) would pass 1 MiB. The page is cut after the
last Session that fits, with `nextCursor`; following it lists every Session once."""

from __future__ import annotations

from pathlib import Path

import orjson
import trio

from maia.protocol import SessionListOutput, to_json
from maia.service import ServiceContext
from maia.service._page_bytes import PAGE_BUDGET_BYTES, fitting, session_bytes
from maia.service._projects import project_add
from maia.service._sessions import session_archive, session_create, session_list, session_stop
from tests.maia.service._helpers import params
from tests.maia.service.conftest import ctx

__all__ = ["ctx"]

BOUND = 1_048_576
SESSIONS = 40
SUMMARY = "\n" * 16_384  # 16 KiB of UTF-8, 32 KiB as JSON


async def _archived_sessions(ctx: ServiceContext, root: Path) -> list[str]:
    await trio.Path(root).mkdir()
    project = await project_add(
        ctx, params("project.add", {"commandId": "p", "rootPath": str(root)})
    )
    ids: list[str] = []
    for index in range(SESSIONS):
        body = {"commandId": f"c{index}", "projectId": project.project.project_id}
        session_id = (await session_create(ctx, params("session.create", body))).session.session_id
        stop = {"commandId": f"s{index}", "sessionId": session_id}
        await session_stop(ctx, params("session.stop", stop))
        archive = {"commandId": f"a{index}", "sessionId": session_id, "summary": SUMMARY}
        await session_archive(ctx, params("session.archive", archive))
        ids.append(session_id)
    return ids


async def test_a_wide_session_list_is_cut_under_the_frame(
    ctx: ServiceContext, tmp_path: Path
) -> None:
    """Each page's JSON is under 1 MiB, the first is cut with a cursor (40 Sessions are 1.3
    MB), and the pages list every Session once."""
    ids = await _archived_sessions(ctx, tmp_path / "wide")
    pages: list[SessionListOutput] = []
    body: dict[str, object] = {"includeArchived": True, "limit": 100}
    while len(pages) < 10:
        page = await session_list(ctx, params("session.list", body))
        pages.append(page)
        if page.next_cursor is None:
            break
        body = {**body, "cursor": page.next_cursor}
    sizes = [len(orjson.dumps(to_json(page))) for page in pages]
    assert all(size < BOUND for size in sizes), sizes
    assert sum(sizes) > BOUND, "the list is not wide: no case"
    assert len(pages) > 1
    assert pages[-1].next_cursor is None
    listed = [s.session_id for page in pages for s in page.sessions]
    assert sorted(listed) == sorted(ids)
    for session in pages[0].sessions:  # the count is from above
        assert session_bytes(session) >= len(orjson.dumps(to_json(session)))


def test_the_count_is_from_above_and_keeps_one_entry() -> None:
    """fitting: entries that fit whole, never none (the first travels alone), the budget is
    under the frame."""
    assert PAGE_BUDGET_BYTES < BOUND
    assert fitting([10, 10, 10], lambda n: n, budget=25) == 2
    assert fitting([30, 10], lambda n: n, budget=25) == 1
    assert fitting([], lambda n: n, budget=25) == 0
    assert fitting([5] * 4, lambda n: n, budget=25) == 4
