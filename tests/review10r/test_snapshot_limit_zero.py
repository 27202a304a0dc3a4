"""observe.events with `limit: 0` asks for no snapshot records, and its `truncated` must
still say whether matching events exist that the limit left out (docs/observations.md: "older
matching events exist that the limit left out"): it said false whatever the journal held, so
a client could not tell an empty journal from a skipped one. A real Node, its observation
socket on loopback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
import trio

from maia.client import read_discovery, read_token
from tests.maia.node._raw import hello, open_observation_socket, port_of

from ..review10o._api import api_of, real_node


async def _snapshot(port: int, token: str, query: dict[str, Any]) -> tuple[bool, int]:
    """(truncated, records) of the starting snapshot of `query`."""
    auth = [(b"Authorization", f"Bearer {token}".encode())]
    records = 0
    async with open_observation_socket(port, auth) as ws:
        assert (await hello(ws))["ok"] is True
        await ws.send_message(orjson.dumps({"id": 1, "method": "observe.events",
                                            "params": {"query": query}}))  # fmt: skip
        while True:
            with trio.fail_after(30):
                answer = orjson.loads(await ws.get_message())
            assert answer["ok"] is True, answer
            frame: dict[str, Any] = answer["result"]["frame"]
            if frame["type"] == "snapshot":
                records += len(frame["records"])
                if frame["final"]:
                    return bool(frame["truncated"]), records


@pytest.mark.parametrize(
    ("event_type", "truncated"), [("project.added", True), ("routine.created", False)]
)
def test_a_zero_limit_snapshot_says_whether_it_left_matches_out(
    tmp_path: Path, event_type: str, truncated: bool
) -> None:
    """Two Projects added: limit 0 of project.added is truncated (2 left out); limit 0 of
    routine.created (none in the journal) is not; neither carries a record."""
    with real_node(tmp_path) as node:
        with api_of(node) as api:
            api.project(tmp_path / "p0")
            api.project(tmp_path / "p1")
        discovery = read_discovery(node.home / "node.json")
        assert discovery is not None
        token = read_token(node.home / "node.token")
        query = {"eventTypes": [event_type], "limit": 0}
        found = trio.run(_snapshot, port_of(discovery.url), token, query)
    assert found == (truncated, 0)
