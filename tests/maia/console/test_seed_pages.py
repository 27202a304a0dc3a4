"""The console's completion caches seed from list pages (`_app._seed_pages`, one loop for
Sessions, routines and approvals): page after page by `nextCursor`, at most SEED_PAGES; a
Node that does not serve an optional list (an older one) leaves it out, any other refusal
and a refusal of the Session list go up."""

from __future__ import annotations

from typing import Any

import pytest

from maia.console import _app
from maia.core import MaiaError


class _Pages:
    """A client answering `request` from a list of pages (or raising `error`)."""

    def __init__(self, pages: int, error: str | None = None) -> None:
        self.pages, self.error = pages, error
        self.asked: list[tuple[str, dict[str, Any]]] = []

    async def request(self, op_id: str, params: dict[str, Any]) -> dict[str, Any]:
        self.asked.append((op_id, dict(params)))
        if self.error is not None:
            raise MaiaError(self.error, "no", {})
        n = len(self.asked)
        return {"items": [n], **({"nextCursor": f"c{n}"} if n < self.pages else {})}


async def test_pages_follow_the_cursor_up_to_the_bound() -> None:
    seen: list[int] = []
    client = _Pages(3)
    await _app._seed_pages(client, "x.list", {"limit": 100},
                           lambda page: seen.extend(page["items"]), optional=False)  # fmt: skip
    assert seen == [1, 2, 3]
    assert client.asked == [("x.list", {"limit": 100}), ("x.list", {"limit": 100, "cursor": "c1"}),
                            ("x.list", {"limit": 100, "cursor": "c2"})]  # fmt: skip
    endless = _Pages(10 * _app.SEED_PAGES)
    await _app._seed_pages(endless, "x.list", {}, lambda page: None, optional=False)
    assert len(endless.asked) == _app.SEED_PAGES


@pytest.mark.parametrize("code", ["unknown_method", "command_not_implemented"])
async def test_an_optional_list_a_node_lacks_is_left_out(code: str) -> None:
    await _app._seed_pages(_Pages(1, code), "routine.list", {}, lambda page: None, optional=True)
    with pytest.raises(MaiaError):
        await _app._seed_pages(_Pages(1, code), "session.list", {}, lambda page: None,
                               optional=False)  # fmt: skip
    with pytest.raises(MaiaError):
        await _app._seed_pages(_Pages(1, "unavailable"), "routine.list", {}, lambda page: None,
                               optional=True)  # fmt: skip
