"""The API's 1 MiB message bound, at a real Node process, in the unit docs/node.md names.
The docs said "1,048,576 characters of a text message" while the Node's WebSocket layer
counts the UTF-8 bytes of the payload, so a message of fewer characters than the bound but
more bytes was closed 1009 against the docs; the docs now say bytes of UTF-8."""

from __future__ import annotations

import json
from pathlib import Path

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


def test_the_docs_name_the_bound_in_bytes_of_utf8() -> None:
    """docs/node.md states the frame bound as 1 MiB of UTF-8 (bytes), not characters."""
    text = (Path(__file__).parents[2] / "docs" / "node.md").read_text()
    assert "1,048,576 characters" not in text
    assert "1,048,576 bytes of UTF-8" in text


def test_a_message_under_the_bound_in_characters_over_it_in_bytes_is_closed_1009(
    node_process: NodeProcess,
) -> None:
    """600,000 two-byte characters (1.2 MB of UTF-8, over the bound in bytes): Close 1009,
    as the docs say, and a new connection is then served."""
    message = _status_padded_with("\u00e9" * 600_000)
    assert len(message.decode()) < BOUND < len(message)
    with RawApi(node_process.port, node_process.token) as connection:
        connection.hello()
        connection.socket.sendall(frame(TEXT, message))
        opcode, payload = connection.read_frame()
        assert opcode == CLOSE
        assert int.from_bytes(payload[:2]) == 1009
    with RawApi(node_process.port, node_process.token) as connection:
        connection.hello()
        assert connection.ask({"id": 2, "method": "node.status", "params": {}})["ok"] is True
