"""approval.list pages like the other lists (`cursor`, `nextCursor`) and every page stays
under the 1 MiB frame: 40 approvals whose 8 KiB summaries are control characters (6 bytes
each as JSON) are 1.9 MB, which one page of `limit` 100 answered `frame_too_large`. The
approvals are rows a second writer puts in a real Node's database (a real worker asks one at
a time); the Node reads them as its own."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import orjson
import trio

from maia.client import open_client
from maia.console._app import _seed_approvals
from maia.console._approvals import ApprovalCache
from maia.console._status import NodeState, StatusTracker

from ._api import Api, api_of, command, real_node

APPROVALS = 40
SUMMARY = "\x01" * 8192  # 8 KiB of UTF-8, 48 KiB as JSON
BOUND = 1_048_576


def _plant(home: Path, session_id: str, turn_id: str, count: int = APPROVALS) -> list[str]:
    """`count` approvals of the turn, every other one pending (an odd index)."""
    ids = [f"approval_{index:032x}" for index in range(count)]
    conn = sqlite3.connect(home / "maia.db", timeout=10)
    try:
        with conn:
            conn.executemany(
                "INSERT INTO approvals (approval_id, session_id, turn_id, call_id, kind, summary,"
                " options, can_remember, state, revision, created_ms)"
                " VALUES (?, ?, ?, ?, 'command', ?, '[]', 0, ?, 1, ?)",
                [(approval_id, session_id, turn_id, f"call-{index}", SUMMARY,
                  "pending" if index % 2 else "denied", 1_700_000_000_000 + index)
                 for index, approval_id in enumerate(ids)],
            )  # fmt: skip
    finally:
        conn.close()
    return ids


def _all_pages(api: Api, body: dict[str, object]) -> list[dict[str, Any]]:
    pages: list[dict[str, Any]] = []
    while len(pages) < APPROVALS + 1:
        answer = api.ask("approval.list", body)
        assert answer["ok"] is True, answer.get("error", answer)
        pages.append(answer)
        cursor = answer["result"]["nextCursor"]
        if cursor is None:
            break
        body = {**body, "cursor": cursor}
    return pages


def test_a_wide_approval_list_is_paged_under_the_frame(tmp_path: Path) -> None:
    """Each page is under 1 MiB, pending ones first, and the pages list every approval once;
    a filter's cursor is refused by another filter (invalid_cursor)."""
    with real_node(tmp_path) as node, api_of(node) as api:
        session_id = api.session(api.project(tmp_path / "p"))["sessionId"]
        turn = api.call("turn.send", {"commandId": command(), "sessionId": session_id,
                                      "text": "hi", "waitMilliseconds": 4000})  # fmt: skip
        ids = _plant(node.home, session_id, turn["turn"]["turnId"])
        pages = _all_pages(api, {"limit": 100})
        assert len(pages) > 1
        assert all(len(orjson.dumps(page)) < BOUND for page in pages)
        listed = [a for page in pages for a in page["result"]["approvals"]]
        assert sorted(a["approvalId"] for a in listed) == sorted(ids)
        states = [a["state"] for a in listed]
        assert states == sorted(states, key=lambda state: state != "pending")
        cursor = pages[0]["result"]["nextCursor"]
        error = api.error("approval.list", {"state": "pending", "cursor": cursor})
        assert error["code"] == "invalid_cursor"
        pending = _all_pages(api, {"state": "pending", "limit": 7})
        found = [a["approvalId"] for page in pending for a in page["result"]["approvals"]]
        assert found == [i for i in reversed(ids) if int(i[-2:], 16) % 2]


def test_the_console_reads_every_page_and_the_toolbar_says_more(tmp_path: Path) -> None:
    """The console's approval completion is seeded from every page (bounded), and its
    toolbar says `N+` when one page of pending approvals did not hold them all."""
    with real_node(tmp_path) as node, api_of(node) as api:
        session_id = api.session(api.project(tmp_path / "p"))["sessionId"]
        turn = api.call("turn.send", {"commandId": command(), "sessionId": session_id,
                                      "text": "hi", "waitMilliseconds": 4000})  # fmt: skip
        ids = _plant(node.home, session_id, turn["turn"]["turnId"], 240)  # 120 pending
        pending = {i for i in ids if int(i[-8:], 16) % 2}
        cache, state = trio.run(_console_view, node.home)
    assert {a.approval_id for a in cache.matches("approval_")} == pending
    assert 0 < state.pending_approvals < len(pending)  # one page: cut by count or bytes
    assert state.more_approvals
    assert state.toolbar().startswith(f" approvals {state.pending_approvals}+ pending · ")


async def _console_view(home: Path) -> tuple[ApprovalCache, NodeState]:
    cache = ApprovalCache()
    with trio.fail_after(60):
        async with open_client(home=home) as client:
            await _seed_approvals(client, cache)
            tracker = StatusTracker(client, lambda _: None)
            return cache, await tracker.refresh()
