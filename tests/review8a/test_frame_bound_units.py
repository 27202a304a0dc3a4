"""The API's 1 MiB message bound, at a real Node process, in the unit docs/node.md names:
"Frames are bounded at 1 MiB (1,048,576 characters of a text message)". The Node's
WebSocket layer counts the UTF-8 bytes of the payload instead, so a message of fewer
characters than the bound but more bytes is closed 1009."""

from __future__ import annotations

import json

import pytest

from tests.maia.node.conftest import NodeProcess

from ._wire import CLOSE, TEXT, RawApi, frame

BOUND = 1_048_576


def _status_padded_with(text: str) -> bytes:
    return json.dumps(
        {"id": 1, "method": "node.status", "params": {"pad": text}}, ensure_ascii=False
    ).encode()


def test_a_message_over_the_bound_in_characters_is_closed_1009(
    node_process: NodeProcess,
) -> None:
    """1,100,000 ASCII characters (over the bound in either unit): Close 1009, and a new
    connection is then served."""
    with RawApi(node_process.port, node_process.token) as connection:
        connection.hello()
        connection.socket.sendall(frame(TEXT, _status_padded_with("a" * 1_100_000)))
        opcode, payload = connection.read_frame()
        assert opcode == CLOSE
        assert int.from_bytes(payload[:2]) == 1009
    with RawApi(node_process.port, node_process.token) as connection:
        connection.hello()
        assert connection.ask({"id": 2, "method": "node.status", "params": {}})["ok"] is True


@pytest.mark.xfail(
    strict=True,
    reason=(
        "docs/node.md bounds a text message at 1,048,576 characters, but the Node's "
        "WebSocket reader (max_message_size=MAX_FRAME_BYTES in maia/node/_server.py, "
        "checked on the frame header's byte length) closes 1009 a message of 600,000 "
        "characters that is 1.2 MB of UTF-8; the SDK (MaiaClient.request) also bounds "
        "bytes: the doc's unit is wrong"
    ),
)
def test_a_message_under_the_bound_in_characters_is_answered(
    node_process: NodeProcess,
) -> None:
    """600,000 two-byte characters (under the documented character bound): answered (here
    validation_failed for the unknown `pad`), not closed."""
    message = _status_padded_with("\u00e9" * 600_000)
    assert len(message.decode()) < BOUND < len(message)
    with RawApi(node_process.port, node_process.token) as connection:
        connection.hello()
        connection.socket.sendall(frame(TEXT, message))
        opcode, payload = connection.read_frame()
        assert opcode == TEXT, (opcode, payload[:2])
        assert json.loads(payload)["error"]["details"]["path"] == "pad"
