"""`turn show TURN --full`: every item of a turn, following `turn.show`'s item pages.

Each page stays under the Node's 1 MiB frame; this follows `nextItemCursor` to the last
page. Human output prints the turn once, then each item whole, and for an item whose text is
only its start, where the rest is (its artifact file). `--jsonl` prints one item a line as
pages arrive; `--json` prints one document: the first page's turn and prompt with every item.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any, Final

from . import _exit
from ._render import human

PAGES_MAX: Final = 100_000  # every page lists at least one item: a bound, never reached


async def pages(client: Any, turn_id: str) -> AsyncIterator[dict[str, Any]]:
    """`turn.show`'s pages of one turn, first to last. Raises MaiaError from the Node."""
    params: dict[str, Any] = {"turnId": turn_id}
    for _ in range(PAGES_MAX):
        page: dict[str, Any] = await client.request("turn.show", params)
        yield page
        cursor = page.get("nextItemCursor")
        if not page.get("itemsTruncated") or not cursor:
            return
        params = {"turnId": turn_id, "itemCursor": cursor}


def item_text(item: dict[str, Any]) -> str:
    """One item for a person: a header line, its whole text, and where any rest is."""
    head = f"--- item {item['sequence']} {item['kind']} ({item['state']}) {item['itemId']}\n"
    text = item.get("text") or ""
    lines = [head, text, "" if not text or text.endswith("\n") else "\n"]
    if item.get("truncated"):
        where = item.get("artifactPath")
        lines.append(
            f"(truncated: the rest is in {where})\n"
            if where
            else "(truncated: only its start fits a reply)\n"
        )
    return "".join(lines)


async def show_full(client: Any, params: dict[str, Any], out: Any) -> int:
    """Print every item of the turn (exit 0). Raises MaiaError from the Node."""
    first: dict[str, Any] | None = None
    items: list[dict[str, Any]] = []
    async for page in pages(client, params["turnId"]):
        if first is None:
            first = page
            if out.fmt == "human":
                head = {k: v for k, v in page.items() if k not in ("items", "nextItemCursor")}
                out.data(human("turn.show", {**head, "itemsTruncated": False}, out.now_ms))
        for item in page["items"]:
            if out.fmt == "human":
                out.data(item_text(item))
            elif out.fmt == "jsonl":
                out.data(json.dumps(item, ensure_ascii=False, sort_keys=True) + "\n")
            else:
                items.append(item)
    assert first is not None
    if out.fmt == "json":
        whole = {**first, "items": items, "itemsTruncated": False, "nextItemCursor": None}
        out.json({"ok": True, "result": whole})
    return _exit.OK
