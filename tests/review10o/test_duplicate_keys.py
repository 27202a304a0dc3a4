"""A request whose JSON repeats a key is refused `invalid_request` naming the key where it
repeats (`details.path`, from the envelope: `params.sessionId`, `params.position.kind`), and
the request's `id` when it can be read (the answer's `id`); the connection serves on (a real
Node process). Before, `details` was `{}`."""

from __future__ import annotations

from pathlib import Path

import pytest

from maia.core import MaiaError
from maia.observe import parse_subscribe
from tests.review8a._wire import RawApi

from ._api import api_of, real_node

FRAMES = [
    (b'{"id":1,"method":"session.show","params":{"sessionId":"a","sessionId":"b"}}',
     "params.sessionId", 1),
    (b'{"id":2,"method":"events.read","params":{"position":{"kind":"start","kind":"start"}}}',
     "params.position.kind", 2),
    (b'{"id":3,"id":4,"method":"node.status","params":{}}', "id", None),
    (b'{"id":5,"method":"session.list","params":{"labels":["a"],"x":[{"k":1,"k":2}]}}',
     "params.x[0].k", 5),
]  # fmt: skip


@pytest.mark.parametrize(("frame", "path", "request_id"), FRAMES)
def test_a_duplicate_key_is_named(
    tmp_path: Path, frame: bytes, path: str, request_id: int | None
) -> None:
    """invalid_request, details.path the repeated key's path, the answer's id the request's."""
    with real_node(tmp_path) as node, api_of(node) as api:
        raw: RawApi = api.raw
        answer = raw.ask(frame)
        assert answer["ok"] is False
        error = answer["error"]
        assert error["code"] == "invalid_request", error
        assert error["details"].get("path") == path, error
        assert answer["id"] == request_id, answer
        assert path in error["message"], error
        assert api.call("node.status", {})["nodeId"]


def test_a_subscribe_with_a_duplicate_key_is_named() -> None:
    """The observation socket's parser names the repeated key the same way."""
    with pytest.raises(MaiaError) as caught:
        parse_subscribe(b'{"id":7,"method":"observe.events","params":{"limit":1,"limit":2}}')
    assert caught.value.code == "invalid_request"
    assert caught.value.details == {"id": 7, "path": "params.limit"}
