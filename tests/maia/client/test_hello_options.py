"""The one hello of a connection: `open_client(hello=...)` and `connect_sync(hello=...)` say
the caller's options in the connection's own `node.hello` (a real Node process), and a
second `node.hello` on a greeted connection is refused `invalid_request` while the
connection goes on."""

from __future__ import annotations

from pathlib import Path

import pytest

from maia.client import Discovery, open_client
from maia.client._sync import connect_sync
from maia.protocol import REGISTRY_DIGEST, MaiaError

NodeProcess = tuple[Path, Discovery]
OTHER = "sha256:" + "2" * 64


async def test_open_client_says_its_hello_options(node_process: NodeProcess) -> None:
    """The options reach the Node (another digest: registryMatch false; None drops the
    field); node.hello again on that connection is invalid_request; node.status works."""
    home, record = node_process
    async with open_client(home=home, hello={"registryDigest": OTHER, "clientName": "tool"},
                           require_registry_match=False) as client:  # fmt: skip
        assert client.hello["registryMatch"] is False
        assert client.hello["nodeId"] == record.node_id
        with pytest.raises(MaiaError) as again:
            await client.call("node.hello", protocol="maia.protocol/v1alpha1")
        assert again.value.code == "invalid_request"
        assert again.value.details["method"] == "node.hello"
        assert (await client.node.status()).node_id == record.node_id
    async with open_client(home=home, hello={"registryDigest": None},
                           require_registry_match=False) as bare:  # fmt: skip
        assert bare.hello["registryMatch"] is False  # no digest: no match
    async with open_client(home=home, hello={"clientName": "tool"}) as own:
        assert (own.hello["registryMatch"], own.hello["registryDigest"]) == (True, REGISTRY_DIGEST)


def test_connect_sync_says_its_hello_options(node_process: NodeProcess) -> None:
    """The blocking client: the same options, the same refusals (another protocol is
    protocol_incompatible, a bad field validation_failed naming it, a second hello
    invalid_request with the connection still serving)."""
    home, _ = node_process
    with connect_sync(home=home, hello={"registryDigest": OTHER},
                      require_registry_match=False) as client:  # fmt: skip
        assert client.hello["registryMatch"] is False
        with pytest.raises(MaiaError) as again:
            client.request("node.hello", {"protocol": "maia.protocol/v1alpha1"})
        assert again.value.code == "invalid_request"
        assert "storage" in client.request("node.status")
    with pytest.raises(MaiaError) as old, connect_sync(home=home, hello={"protocol": "v0"}):
        pass
    assert old.value.code == "protocol_incompatible"
    with pytest.raises(MaiaError) as bad, connect_sync(home=home, hello={"clientName": ""}):
        pass
    assert (bad.value.code, bad.value.details.get("path")) == ("validation_failed", "clientName")
