"""A connection that never says hello, at a real Node process: on /api/v1 it held one of
the 256 slots for as long as the peer kept it open (the observation socket gave up after
10 s). Now the Node answers `hello_required` after 10 s without a successful hello and
closes it with 1008; a connection that said hello is served on. The observation socket's
refusal after 8 bad frames says so, not "within 10 s"."""

from __future__ import annotations

import json

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


def test_the_observation_socket_says_why_after_8_bad_frames(node_process: NodeProcess) -> None:
    """8 frames before a hello: each hello_required, then the last word names the 8 frames,
    not a 10 s wait."""
    path = "/api/v1/observations"
    with RawApi(node_process.port, node_process.token, path, SUBPROTOCOL) as connection:
        for index in range(MAX_HELLO_ATTEMPTS):
            answer = connection.ask({"id": index, "method": "observe.events"})
            assert answer["error"]["code"] == "hello_required"
        opcode, payload = connection.read_frame()
    assert opcode == TEXT
    error = json.loads(payload)["error"]
    assert error["code"] == "hello_required"
    assert f"in {MAX_HELLO_ATTEMPTS} frames" in error["message"]
