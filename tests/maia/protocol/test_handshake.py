"""One handshake everywhere, over a real Node on 127.0.0.1: node.hello on /api/v1 and on
/api/v1/observations, registryMatch only for the same digest, a deprecated name's diagnostic."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
import trio
from trio_websocket import WebSocketConnection, open_websocket_url, wrap_client_stream

from maia.client import Endpoint, attach_session, observe_events
from maia.node import ApiServer, Call, Dispatcher, HandlerTable
from maia.protocol import (
    PROTOCOL_VERSION,
    REGISTRY,
    REGISTRY_VERSION,
    Deprecation,
    MaiaError,
    NodeHelloOutput,
    ProjectListOutput,
    build_registry,
)
from tests.maia.node.conftest import LiveNode

SUBPROTOCOL = "maia.node.observations.v1"


async def _ask(ws: WebSocketConnection, request: dict[str, Any]) -> dict[str, Any]:
    await ws.send_message(orjson.dumps(request).decode())
    with trio.fail_after(10):
        answer: dict[str, Any] = orjson.loads(await ws.get_message())
    return answer


def _hello(**params: Any) -> dict[str, Any]:
    return {"id": "h", "method": "node.hello", "params": {"protocol": PROTOCOL_VERSION, **params}}


async def test_a_hello_without_a_digest_is_no_registry_match(node: LiveNode) -> None:
    """/api/v1: no registryDigest answers registryMatch false; the Node's own digest, true."""
    async with open_websocket_url(node.url, extra_headers=node.auth) as ws:
        bare = await _ask(ws, _hello())
    async with open_websocket_url(node.url, extra_headers=node.auth) as ws:
        other = await _ask(ws, _hello(registryDigest="sha256:" + "0" * 64))
    async with open_websocket_url(node.url, extra_headers=node.auth) as ws:
        same = await _ask(ws, _hello(registryDigest=REGISTRY.digest))
    assert bare["ok"]
    assert bare["result"]["registryMatch"] is False
    assert other["ok"]
    assert other["result"]["registryMatch"] is False
    assert same["ok"]
    assert same["result"]["registryMatch"] is True


async def _observation_socket(node: LiveNode, nursery: trio.Nursery) -> WebSocketConnection:
    tcp = await trio.open_tcp_stream("127.0.0.1", node.port)
    return await wrap_client_stream(
        nursery, tcp, f"127.0.0.1:{node.port}", "/api/v1/observations",
        subprotocols=[SUBPROTOCOL], extra_headers=node.auth,
    )  # fmt: skip


async def test_the_observation_socket_starts_with_hello(node: LiveNode) -> None:
    """A subscribe before hello is hello_required; a bad hello its error; then it streams."""
    subscribe = {"id": 7, "method": "observe.events", "params": {"query": {"limit": 0}}}
    async with trio.open_nursery() as nursery:
        ws = await _observation_socket(node, nursery)
        skipped = await _ask(ws, subscribe)
        wrong = await _ask(ws, {**_hello(), "params": {"protocol": "maia.protocol/v0"}})
        greeted = await _ask(ws, _hello(registryDigest=REGISTRY.digest))
        first = await _ask(ws, subscribe)
        await ws.aclose()
    assert skipped["id"] == 7
    assert skipped["error"]["code"] == "hello_required"
    assert "node.hello" in skipped["error"]["message"]
    assert wrong["error"]["code"] == "protocol_incompatible"
    assert greeted["ok"]
    assert greeted["result"]["registryMatch"] is True
    assert greeted["result"]["protocol"] == PROTOCOL_VERSION
    assert first["id"] == 7
    assert first["result"]["frame"]["type"] == "snapshot"


async def test_an_old_client_that_never_says_hello_gets_a_typed_error(node: LiveNode) -> None:
    """session.attach as the first frame (what an old SDK sent) answers hello_required."""
    request = {"id": "a", "method": "session.attach", "params": {"sessionId": "session_x"}}
    async with trio.open_nursery() as nursery:
        ws = await _observation_socket(node, nursery)
        answer = await _ask(ws, request)
        again = await _ask(ws, _hello())
        await ws.aclose()
    assert answer["error"]["code"] == "hello_required"
    assert answer["error"]["details"]["method"] == "session.attach"
    assert again["ok"]  # the connection stays open for a hello


async def test_the_sdk_feeds_say_hello_and_check_the_registry(node: LiveNode) -> None:
    """observe_events and attach_session greet first (registryMatch true) and then stream."""
    endpoint = Endpoint(node.url, node.token)
    with trio.fail_after(60):
        async with observe_events(endpoint, {"limit": 0}) as feed:
            frame = await feed.__anext__()
        assert frame.type == "snapshot"
        assert feed.hello["registryMatch"] is True
        async with attach_session(endpoint, "session_nope", max_retries=0) as attach:
            with pytest.raises(MaiaError) as raised:
                await attach.__anext__()
        assert raised.value.code == "resource_not_found"
        assert attach.hello["nodeId"] == feed.hello["nodeId"]


async def test_a_second_hello_on_the_observation_socket_is_refused(node: LiveNode) -> None:
    """After the hello the next request must be a subscribe: another hello is invalid."""
    async with trio.open_nursery() as nursery:
        ws = await _observation_socket(node, nursery)
        assert (await _ask(ws, _hello()))["ok"]
        second = await _ask(ws, _hello())
        await ws.aclose()
    assert second["error"]["code"] == "invalid_request"
    assert "already answered" in second["error"]["message"]


async def test_a_renamed_op_answers_through_its_alias_with_a_diagnostic(
    nursery: trio.Nursery,
) -> None:
    """A call by a deprecated name runs the replacement; the answer carries `deprecations`."""
    alias = Deprecation(
        kind="operation", name="project.ls", replacement="project.list",
        deprecated_in=REGISTRY_VERSION, deprecated_on="2026-12-01", remove_after="2027-03-01",
    )  # fmt: skip
    registry = build_registry(REGISTRY, deprecations=(alias,), registry_version=REGISTRY_VERSION)
    table = HandlerTable(registry)
    served: list[str] = []

    @table.handler("node.hello")
    async def node_hello(call: Call, params: Any) -> Any:
        return NodeHelloOutput(node_id="node_1", epoch=1, protocol=PROTOCOL_VERSION,
                               registry_digest=registry.digest, version="0", capabilities=(),
                               registry_match=True)  # fmt: skip

    @table.handler("project.list")
    async def project_list(call: Call, params: Any) -> Any:
        served.append(call.method)
        return ProjectListOutput(projects=(), next_cursor=None)

    server = ApiServer(Dispatcher(table, registry=registry), None, token="t" * 64)
    port = await nursery.start(server.serve, 0)
    auth = [(b"Authorization", b"Bearer " + b"t" * 64)]
    async with open_websocket_url(f"ws://127.0.0.1:{port}/api/v1", extra_headers=auth) as ws:
        greeted = await _ask(ws, _hello())
        assert greeted["ok"], greeted
        assert "deprecations" not in greeted
        by_alias = await _ask(ws, {"id": 1, "method": "project.ls", "params": {}})
        by_name = await _ask(ws, {"id": 2, "method": "project.list", "params": {}})
        refused = await _ask(ws, {"id": 3, "method": "project.ls", "params": {"x": 1}})
    assert served == ["project.ls", "project.list"]  # the replacement's handler ran twice
    assert by_alias["result"] == {"projects": [], "nextCursor": None}
    assert by_alias["deprecations"] == [alias.diagnostic()]
    assert by_alias["deprecations"][0]["removeAfter"] == "2027-03-01"
    assert "deprecations" not in by_name
    assert refused["error"]["code"] == "validation_failed"  # the replacement's input schema


async def test_a_refused_frame_answers_its_id_in_the_envelope_only(node: LiveNode) -> None:
    """A frame the parser refuses (params not an object, an unknown envelope field, a bad
    subscribe param) answers its id in the envelope, and its error's details carry only
    the code's own fields (`path`: the field at fault): no `id`, on either socket."""
    async with open_websocket_url(node.url, extra_headers=node.auth) as ws:
        assert (await _ask(ws, _hello()))["ok"]
        params = await _ask(ws, {"id": 5, "method": "node.status", "params": []})
        envelope = await _ask(ws, {"id": 6, "method": "node.status", "extra": 1})
    subscribe = {"id": 8, "method": "observe.events", "params": {"query": {"limit": -1}}}
    async with trio.open_nursery() as nursery:
        obs = await _observation_socket(node, nursery)
        early = await _ask(obs, {**subscribe, "params": {"query": {"limit": 0}}})
        assert (await _ask(obs, _hello()))["ok"]
        bad = await _ask(obs, subscribe)
        await obs.aclose()
    assert (params["id"], params["error"]["code"]) == (5, "validation_failed")
    assert params["error"]["details"] == {"path": "params"}
    assert (envelope["id"], envelope["error"]["code"]) == (6, "invalid_request")
    assert envelope["error"]["details"] == {"path": "extra"}
    assert (early["id"], early["error"]["code"]) == (8, "hello_required")
    assert (bad["id"], bad["error"]["code"]) == (8, "validation_failed")
    for answer in (early, bad):
        assert "id" not in answer["error"]["details"]
    assert "path" in bad["error"]["details"]
