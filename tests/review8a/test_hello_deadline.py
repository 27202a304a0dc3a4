"""A connection that never says hello, at a real Node process: on /api/v1 it held one of
the 256 slots for as long as the peer kept it open (the observation socket gave up after
10 s). Now the Node answers `hello_required` after 10 s without a successful hello and
closes it with 1008; a connection that said hello is served on. The observation socket's
refusal after 8 bad frames says so, not "within 10 s"."""

from __future__ import annotations

import json

import trio
from trio_websocket import open_websocket_url

from maia.observe import SUBPROTOCOL
from tests.maia.node.conftest import NodeProcess

from ._wire import CLOSE, TEXT, RawApi

MAX_HELLO_ATTEMPTS = 8  # maia/observe/_socket.py


def test_a_connection_without_hello_is_closed_after_10_s(node_process: NodeProcess) -> None:
    """No hello: hello_required (id null), then Close 1008; a greeted connection opened at
    the same time still answers node.status."""
    with (
        RawApi(node_process.port, node_process.token) as greeted,
        RawApi(node_process.port, node_process.token) as silent,
    ):
        greeted.hello()
        silent.socket.settimeout(30)
        opcode, payload = silent.read_frame()
        assert opcode == TEXT
        answer = json.loads(payload)
        assert answer["id"] is None
        assert answer["error"]["code"] == "hello_required"
        assert "10 s" in answer["error"]["message"]
        opcode, payload = silent.read_frame()
        assert opcode == CLOSE
        assert int.from_bytes(payload[:2]) == 1008
        assert greeted.ask({"id": 2, "method": "node.status", "params": {}})["ok"] is True


async def _bad_frames_then_last_word(url: str, token: str) -> dict[str, object]:
    headers = [(b"Authorization", f"Bearer {token}".encode())]
    with trio.fail_after(20):
        async with open_websocket_url(url, subprotocols=[SUBPROTOCOL], extra_headers=headers) as ws:
            for index in range(MAX_HELLO_ATTEMPTS):
                await ws.send_message(json.dumps({"id": index, "method": "observe.events"}))
                answer = json.loads(await ws.get_message())
                assert answer["error"]["code"] == "hello_required"
            last: dict[str, object] = json.loads(await ws.get_message())
            return last


def test_the_observation_socket_says_why_after_8_bad_frames(node_process: NodeProcess) -> None:
    """8 frames before a hello: the last word names the 8 frames, not a 10 s wait."""
    url = f"ws://127.0.0.1:{node_process.port}/api/v1/observations"
    last = trio.run(_bad_frames_then_last_word, url, node_process.token)
    error = last["error"]
    assert isinstance(error, dict)
    assert error["code"] == "hello_required"
    assert f"in {MAX_HELLO_ATTEMPTS} frames" in error["message"]
