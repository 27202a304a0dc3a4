"""events.read over a journal holding item texts of emoji (4 bytes each) at a real Node
process with echo workers: 500 events would be 1.5 MB of UTF-8 (~530,000 characters). The
Node cuts the page to fit the 1 MiB frame (bytes of UTF-8) with `hasMore` and a cursor after
its last event, so the async SDK and the blocking client (`connect_sync`, which bounds a
message by bytes) read the same pages, and following the cursor reads the whole journal.
Before the fix the Node bounded answers by characters and sent the 1.5 MB page; the blocking
client closed 1009 and raised `frame_too_large`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import trio

from maia.client import connect_sync, open_client, read_discovery, read_token
from tests._node_process import NodeProcess, running_node
from tests._sessions import new_session, wait_turn

CONFIG = '{"executors": {"echo": {"kind": "echo"}}}'
BOUND = 1_048_576
WIDE = "\U0001f600" * 65_536  # the longest prompt, 256 KiB of UTF-8
LIMIT = 500
READ: dict[str, Any] = {"position": {"kind": "start"}, "limit": LIMIT}


async def _seed(url: str, token: str, root: Path) -> list[dict[str, Any]]:
    async with open_client(url, token=token) as client:
        session_id = await new_session(client, root, "wide")
        for index in range(20):
            sent = await client.call(
                "turn.send", command_id=f"wide-{index}", session_id=session_id, text=WIDE
            )
            await wait_turn(client, sent.turn.turn_id, "completed")
        pages: list[dict[str, Any]] = [await client.request("events.read", READ)]
        while pages[-1]["hasMore"] and len(pages) < 10:
            cursor = {"kind": "cursor", "cursor": pages[-1]["nextCursor"]}
            pages.append(await client.request("events.read", {**READ, "position": cursor}))
        assert (await client.request("node.status", {}))["nodeId"]
        return pages


@pytest.fixture(scope="module")
def wide_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, Any]]:
    """A Node whose journal's first 500 events are wide; its URL, token and the pages the
    async SDK read from the start."""
    tmp_path = tmp_path_factory.mktemp("wide")
    node: NodeProcess
    with running_node(tmp_path, CONFIG, {}) as node:
        discovery = read_discovery(node.home / "node.json")
        assert discovery is not None
        token = read_token(node.home / "node.token")
        pages = trio.run(_seed, discovery.url, token, tmp_path / "project")
        yield discovery.url, token, pages


def test_the_async_sdk_reads_the_journal_in_pages_under_the_frame(
    wide_node: tuple[str, str, Any],
) -> None:
    """The async SDK's pages are each under 1 MiB of UTF-8, the first cut with hasMore, and
    together they are the whole journal (more than 1 MiB: the case is real)."""
    _, _, pages = wide_node
    sizes = [len(orjson.dumps(page)) for page in pages]
    assert all(page["status"] == "page" for page in pages)
    assert all(size < BOUND for size in sizes), sizes
    assert sum(sizes) > BOUND, "the journal is not wide: no case"
    assert pages[0]["hasMore"]
    assert len(pages[0]["events"]) < LIMIT
    assert not pages[-1]["hasMore"]
    ids = [event["eventId"] for page in pages for event in page["events"]]
    assert len(ids) == len(set(ids))
    positions = [event["journalPosition"] for page in pages for event in page["events"]]
    assert positions == sorted(positions)


def test_the_blocking_client_reads_the_same_page(wide_node: tuple[str, str, Any]) -> None:
    """connect_sync's events.read answers the page the async SDK read, and the connection
    serves the next call."""
    url, token, pages = wide_node
    with connect_sync(url, token=token, timeout_s=30) as client:
        again = client.request("events.read", READ)
        assert client.request("node.status")["nodeId"]
    assert [event["eventId"] for event in again["events"]] == [
        event["eventId"] for event in pages[0]["events"]
    ]
