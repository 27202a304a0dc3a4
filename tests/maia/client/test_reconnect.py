"""Reconnect on request: a restarted Node (new port, new token, next epoch) is found again."""

from __future__ import annotations

from pathlib import Path

import trio

from maia.client import MaiaClient, open_client
from maia.core import MaiaError
from maia.node import NodeConfig, NodeHome, serve_node


async def _until_lost(client: MaiaClient) -> MaiaError:
    while True:
        try:
            await client.node.status()
        except MaiaError as error:
            return error


async def test_reconnect_finds_the_restarted_node(tmp_path: Path) -> None:
    """Pending calls fail `unavailable` when the Node goes; `reconnect()` reaches its successor."""
    home = NodeHome(tmp_path / "home")
    async with trio.open_nursery() as outer:
        first_scope = trio.CancelScope()
        first_gone = trio.Event()

        async def first_node(task_status: trio.TaskStatus[None]) -> None:
            with first_scope:
                await serve_node(NodeConfig(home), task_status=task_status)
            first_gone.set()

        await outer.start(first_node)
        async with open_client(home=home.root) as client:
            first_epoch = client.hello["epoch"]
            first_scope.cancel()  # the Node stops: its discovery and token files go
            with trio.fail_after(10):
                lost = await _until_lost(client)
            assert lost.code == "unavailable"
            assert lost.retryable is True
            with trio.fail_after(30):
                await first_gone.wait()
            await outer.start(serve_node, NodeConfig(home))
            with trio.fail_after(10):
                await client.reconnect()
            assert client.hello["epoch"] == first_epoch + 1
            assert (await client.node.status()).epoch == first_epoch + 1
        outer.cancel_scope.cancel()
