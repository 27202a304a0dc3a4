"""observe.events' snapshot says `truncated: true` exactly when its limit cut older matching
records off (spec: ObservationSnapshotV1), at a real Node process: with 6 project.added
records, a limit of 2 is truncated (it said false: the scan stopped at the limit without
looking further), a limit of 6 or 100 holds them all and is not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
import trio

from maia.client import read_discovery, read_token
from tests._node_process import NodeProcess
from tests.maia.node._raw import hello, open_observation_socket, port_of

from ._api import api_of, real_node

PROJECTS = 6


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


def snapshot_of(node: NodeProcess, query: dict[str, Any]) -> tuple[bool, int]:
    """(truncated, records) of `query`'s snapshot at `node`'s observation socket."""
    discovery = read_discovery(node.home / "node.json")
    assert discovery is not None
    token = read_token(node.home / "node.token")
    return trio.run(_snapshot, port_of(discovery.url), token, query)


@pytest.mark.parametrize(("limit", "truncated"), [(2, True), (PROJECTS, False), (100, False)])
def test_truncated_says_whether_the_limit_cut_records(
    tmp_path: Path, limit: int, truncated: bool
) -> None:
    with real_node(tmp_path) as node:
        with api_of(node) as api:
            for index in range(PROJECTS):
                api.project(tmp_path / f"p{index}")
        found = snapshot_of(node, {"eventTypes": ["project.added"], "limit": limit})
    assert found == (truncated, min(limit, PROJECTS))
