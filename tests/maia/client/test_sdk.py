"""The SDK against a real Node process: under trio, under asyncio, typed results and errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
import trio

from maia.client import Discovery, open_client
from maia.client._projection import Namespace
from maia.protocol import REGISTRY, MaiaError
from maia.protocol._ops_node import NodeStatusOutput

NodeProcess = tuple[Path, Discovery]


async def _status_via_sdk(home: Path) -> tuple[str, NodeStatusOutput]:
    async with open_client(home=home) as client:
        status = await client.node.status()
        return client.hello["nodeId"], status


async def test_sdk_under_trio(node_process: NodeProcess) -> None:
    """From a trio program: hello, then node.status decoded into its output class."""
    home, record = node_process
    node_id, status = await _status_via_sdk(home)
    assert isinstance(status, NodeStatusOutput)
    assert node_id == status.node_id == record.node_id
    assert status.storage.integrity == "ok"
    assert status.registry_digest == REGISTRY.digest


def test_sdk_under_asyncio(node_process: NodeProcess) -> None:
    """The same SDK under an asyncio event loop reaches the same running Node."""
    home, record = node_process
    node_id, status = anyio.run(_status_via_sdk, home, backend="asyncio")
    assert isinstance(status, NodeStatusOutput)
    assert node_id == status.node_id == record.node_id


async def test_many_concurrent_calls_on_one_client(node_process: NodeProcess) -> None:
    """Requests in flight together on one connection each get their own answer."""
    home, record = node_process
    results: list[str] = []
    async with open_client(home=home) as client:

        async def one() -> None:
            results.append((await client.call("node.status")).node_id)

        async with trio.open_nursery() as nursery:
            for _ in range(24):
                nursery.start_soon(one)
    assert results == [record.node_id] * 24


async def test_errors_are_typed(node_process: NodeProcess) -> None:
    """Node errors and local refusals are MaiaError with a code from the closed set."""
    home, _ = node_process
    async with open_client(home=home) as client:
        with pytest.raises(MaiaError) as missing_session:
            await client.session.show(session_id="session_0123456789abcdef")
        assert missing_session.value.code == "resource_not_found"
        with pytest.raises(MaiaError) as unknown:
            await client.call("no.such.op")
        assert unknown.value.code == "unknown_method"
        with pytest.raises(MaiaError) as invalid:
            await client.request("node.status", {"extra": True})
        assert invalid.value.code == "validation_failed"
        with pytest.raises(MaiaError) as local:
            await client.node.hello(protocol=5)
        assert local.value.code == "validation_failed"
        with pytest.raises(MaiaError) as big:
            await client.request("node.status", {"x": "a" * (1024 * 1024)})
        assert big.value.code == "frame_too_large"
        # None of that broke the connection; other ops decode into their own output class.
        listed = await client.session.list()
        descriptor = REGISTRY.get("session.list")
        assert descriptor is not None
        assert type(listed) is descriptor.output_type
        assert (await client.node.status()).storage.integrity == "ok"


async def test_methods_are_a_projection_of_the_registry(node_process: NodeProcess) -> None:
    """Every registered op is a method under its dotted ID; anything else is no attribute."""
    home, _ = node_process
    async with open_client(home=home) as client:
        for descriptor in REGISTRY:
            target: Any = client
            for part in descriptor.operation_id.split("."):
                target = getattr(target, part)
            assert isinstance(target, Namespace)
            assert callable(target)
        assert set(dir(client)) >= {op.operation_id.split(".")[0] for op in REGISTRY}
        with pytest.raises(AttributeError):
            _ = client.nosuchnoun
        with pytest.raises(AttributeError):
            _ = client.session.nosuchverb


async def test_wrong_token_and_missing_node(node_process: NodeProcess, tmp_path: Path) -> None:
    """A wrong token is unauthenticated; a home with no Node is unavailable."""
    _, record = node_process
    with pytest.raises(MaiaError) as wrong:
        async with open_client(record.url, token="0" * 64):
            pass
    assert wrong.value.code == "unauthenticated"
    with pytest.raises(MaiaError) as missing:
        async with open_client(home=tmp_path / "empty"):
            pass
    assert missing.value.code == "unavailable"


async def test_maia_node_env_names_the_node(
    node_process: NodeProcess, monkeypatch: pytest.MonkeyPatch
) -> None:
    """$MAIA_NODE picks the URL; the token comes from the home's discovery record."""
    home, record = node_process
    monkeypatch.setenv("MAIA_NODE", record.url)
    async with open_client(home=home) as client:
        assert client.endpoint.url == record.url
        assert (await client.node.status()).node_id == record.node_id


async def test_registry_mismatch_is_refused_by_the_sdk(node_process: NodeProcess) -> None:
    """An SDK built on another registry (its hello says so) stops at the hello unless told
    to go on."""
    home, _ = node_process
    other = {"registryDigest": "sha256:" + "1" * 64}
    with pytest.raises(MaiaError) as caught:
        async with open_client(home=home, hello=other):
            pass
    assert caught.value.code == "protocol_incompatible"
    assert caught.value.message == (
        f"this SDK's operation registry sha256:{'1' * 64} is not the Node's {REGISTRY.digest}:"
        " they were built on other registries (upgrade both)"
    )
    assert caught.value.details == {"client": other["registryDigest"], "node": REGISTRY.digest}
    async with open_client(home=home, require_registry_match=False, hello=other) as client:
        assert client.hello["registryMatch"] is False
