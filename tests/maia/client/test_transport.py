"""The SDK facing a misbehaving server (real sockets): bounded frames, garbage, silence."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import orjson
import pytest
import trio
from trio_websocket import ConnectionClosed, WebSocketConnection, WebSocketRequest, serve_websocket

from maia.client import open_client
from maia.protocol import REGISTRY, MaiaError

HELLO = {
    "nodeId": "node_1",
    "epoch": 1,
    "protocol": "maia.protocol/v1alpha1",
    "registryDigest": REGISTRY.digest,
    "version": "0",
    "capabilities": [],
    "registryMatch": True,
}

Behaviour = Callable[[WebSocketConnection, dict[str, object]], Awaitable[None]]


async def _serve(nursery: trio.Nursery, behaviour: Behaviour) -> str:
    async def handler(request: WebSocketRequest) -> None:
        ws = await request.accept()
        try:
            while True:
                frame = orjson.loads(await ws.get_message())
                if frame["method"] == "node.hello":
                    await ws.send_message(
                        orjson.dumps({"id": frame["id"], "ok": True, "result": HELLO}).decode()
                    )
                else:
                    await behaviour(ws, frame)
        except ConnectionClosed:
            pass

    server = await nursery.start(
        lambda task_status: serve_websocket(
            handler, "127.0.0.1", 0, None, max_message_size=8 << 20, task_status=task_status
        )
    )
    return f"ws://127.0.0.1:{server.port}/api/v1"


async def test_oversize_answer_is_refused_by_the_sdk(nursery: trio.Nursery) -> None:
    """An answer over 1 MiB closes the connection (1009) and fails the call frame_too_large."""

    async def huge(ws: WebSocketConnection, frame: dict[str, object]) -> None:
        await ws.send_message("x" * (2 << 20))

    url = await _serve(nursery, huge)
    async with open_client(url, token="0" * 64) as client:
        with pytest.raises(MaiaError) as caught:
            await client.request("node.status")
    assert caught.value.code == "frame_too_large"


async def test_garbage_and_silence_end_in_a_deadline(nursery: trio.Nursery) -> None:
    """Frames that answer nothing are ignored; the call ends with deadline_exceeded."""

    async def garbage(ws: WebSocketConnection, frame: dict[str, object]) -> None:
        for junk in ["not json", "[]", '{"id": "other"}', '{"id": [1]}']:
            await ws.send_message(junk)

    url = await _serve(nursery, garbage)
    async with open_client(url, token="0" * 64, timeout_s=0.5) as client:
        with pytest.raises(MaiaError) as caught:
            await client.request("node.status")
        assert caught.value.code == "deadline_exceeded"
        assert caught.value.retryable is True


async def test_unknown_error_code_from_a_newer_node(nursery: trio.Nursery) -> None:
    """An error code this SDK does not know arrives as internal_error carrying the code."""

    async def newer(ws: WebSocketConnection, frame: dict[str, object]) -> None:
        error = {"code": "brand_new", "message": "m", "retryable": False, "details": {}}
        await ws.send_message(
            orjson.dumps({"id": frame["id"], "ok": False, "error": error}).decode()
        )

    url = await _serve(nursery, newer)
    async with open_client(url, token="0" * 64) as client:
        with pytest.raises(MaiaError) as caught:
            await client.request("node.status")
    assert caught.value.code == "internal_error"
    assert caught.value.details["nodeCode"] == "brand_new"


async def test_nothing_listening_is_unavailable() -> None:
    """A URL where nothing listens is unavailable, quickly and typed."""
    listener = (await trio.open_tcp_listeners(0, host="127.0.0.1"))[0]
    port = listener.socket.getsockname()[1]
    await listener.aclose()
    with pytest.raises(MaiaError) as caught:
        async with open_client(f"ws://127.0.0.1:{port}/api/v1", token="0" * 64):
            pass
    assert caught.value.code == "unavailable"


async def test_a_malformed_url_is_a_configuration_error() -> None:
    """Only ws://host:port/path URLs are accepted."""
    with pytest.raises(MaiaError) as caught:
        async with open_client("http://127.0.0.1/api/v1", token="0" * 64):
            pass
    assert caught.value.code == "configuration_invalid"
