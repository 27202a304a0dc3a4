"""A repeated key's refusal (7b74446) names where it sits and echoes the request's id, but
neither may carry a lone UTF-16 surrogate, which no frame can hold: a repeated key spelled
`"\\ud800"` was answered with empty details (the path did not encode) and an id of
`"\\ud800"` was echoed as `"?"` (the encoder's fallback), which a client may have in flight
as a real id. As for any other lone surrogate, the id is left out (null) and the key is
named `<key>`. A real Node, raw frames on loopback, both sockets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
import trio

from maia.client import read_discovery, read_token
from tests.maia.node._raw import hello, open_observation_socket, port_of
from tests.review8a._wire import TEXT, RawApi, frame

from ..review10o._api import real_node

CASES = [  # (frame, the answer's id, details.path)
    (b'{"id":1,"method":"session.list","params":{"\\ud800":1,"\\ud800":2}}', 1, "params.<key>"),
    (b'{"id":"\\ud800","method":"session.list","params":{"a":1,"a":2}}', None, "params.a"),
]


def _api_answer(port: int, token: str, data: bytes) -> dict[str, Any]:
    with RawApi(port, token) as raw:
        raw.hello()
        raw.socket.sendall(frame(TEXT, data))
        opcode, payload = raw.read_frame()
        assert opcode == TEXT
        answer: dict[str, Any] = orjson.loads(payload)
        return answer


async def _observation_answer(port: int, token: str, data: bytes) -> dict[str, Any]:
    auth = [(b"Authorization", f"Bearer {token}".encode())]
    async with open_observation_socket(port, auth) as ws:
        assert (await hello(ws))["ok"] is True
        await ws.send_message(data.decode())
        with trio.fail_after(30):
            answer: dict[str, Any] = orjson.loads(await ws.get_message())
        return answer


@pytest.mark.parametrize(("data", "request_id", "path"), CASES)
def test_a_repeated_key_refusal_carries_no_lone_surrogate(
    tmp_path: Path, data: bytes, request_id: Any, path: str
) -> None:
    """invalid_request with details.path, the id null when it was a lone surrogate, on
    /api/v1 and on the observation socket."""
    with real_node(tmp_path) as node:
        discovery = read_discovery(node.home / "node.json")
        assert discovery is not None
        port, token = port_of(discovery.url), read_token(node.home / "node.token")
        observed = data.replace(b"session.list", b"observe.events")
        answers = [_api_answer(port, token, data),
                   trio.run(_observation_answer, port, token, observed)]  # fmt: skip
    for answer in answers:
        assert answer["ok"] is False
        assert answer["id"] == request_id, answer
        assert answer["error"]["code"] == "invalid_request"
        assert answer["error"]["details"].get("path") == path, answer
