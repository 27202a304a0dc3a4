"""`client.node.hello()` on an open SDK connection: the connection said its hello when it
opened, and a second `node.hello` is refused by the Node, so the SDK's method was always
refused. Now a bare `client.node.hello()` answers the hello the connection got (decoded, no
frame sent), and one with hello fields is refused here, `invalid_request` naming the
`hello=` option that says them. A raw `request("node.hello")` still reaches the Node."""

from __future__ import annotations

from pathlib import Path

import pytest

from maia.client import Discovery, open_client
from maia.protocol import PROTOCOL_VERSION, REGISTRY, MaiaError, NodeHelloOutput

NodeProcess = tuple[Path, Discovery]


async def test_node_hello_answers_the_connections_hello(node_process: NodeProcess) -> None:
    home, record = node_process
    async with open_client(home=home, hello={"clientName": "tool"}) as client:
        answer = await client.node.hello()
        assert isinstance(answer, NodeHelloOutput)
        assert (answer.node_id, answer.registry_digest, answer.registry_match) == (
            record.node_id, REGISTRY.digest, True)  # fmt: skip
        assert await client.call("node.hello") == answer
        with pytest.raises(MaiaError) as fields:
            await client.node.hello(protocol=PROTOCOL_VERSION)
        assert (fields.value.code, fields.value.details) == (
            "invalid_request", {"method": "node.hello", "option": "hello"})  # fmt: skip
        assert "open_client(hello=" in fields.value.message
        with pytest.raises(MaiaError) as bad:  # a bad field is still named first
            await client.node.hello(protocol=5)
        assert bad.value.code == "validation_failed"
        with pytest.raises(MaiaError) as raw:  # the Node's own refusal, unchanged
            await client.request("node.hello", {"protocol": PROTOCOL_VERSION})
        assert raw.value.code == "invalid_request"
        assert "already answered" in raw.value.message
        await client.reconnect()
        again = await client.node.hello()
        assert again.node_id == record.node_id
        assert (await client.node.status()).node_id == record.node_id
