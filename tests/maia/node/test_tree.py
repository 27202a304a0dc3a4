"""The root tree: storage, services, API in that order; a failed API server is restarted."""

from __future__ import annotations

import orjson
import trio
from trio_websocket import open_websocket_url

from maia.core import read_discovery
from supervision import Strategy

from ._raw import hello, request
from .conftest import LiveNode


async def test_tree_order_and_strategy(node: LiveNode) -> None:
    """Children start storage → observations → services → api and restart rest-for-one."""
    stats = node.running.services.tree.statistics()
    assert stats.strategy is Strategy.REST_FOR_ONE
    assert [child.name for child in stats.children] == [
        "storage",
        "observations",
        "services",
        "api",
    ]
    assert all(child.running for child in stats.children)


async def test_failed_api_server_is_restarted_on_its_port(node: LiveNode) -> None:
    """Breaking the API listener fails the api child; the tree restarts it; clients connect."""
    services = node.running.services
    old_api = services.api
    for listener in old_api.listeners:
        listener.socket.close()  # the accept loop fails: the api child exits with an error
    with trio.fail_after(30):
        while True:  # polling a snapshot: the tree offers no event to wait on
            children = {c.name: c for c in services.tree.statistics().children}
            restarted = services.api is not old_api and services.api.port != 0
            if restarted and children["api"].running and children["api"].restarts >= 1:
                break
            await trio.sleep(0.02)
    assert children["storage"].restarts == 0  # rest-for-one: what started before stays
    record = read_discovery(node.home.discovery_path)
    assert record is not None
    assert record.url == node.url  # the restarted server took its old port back
    async with open_websocket_url(record.url, extra_headers=node.auth) as ws:
        assert (await hello(ws))["ok"]
        answer = await request(ws, orjson.dumps({"id": 1, "method": "node.status"}).decode())
    assert answer["result"]["storage"]["integrity"] == "ok"
