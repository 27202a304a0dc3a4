"""The observation socket always answers a valid error frame: a duplicate key in a frame
whose `id` is an integer past 64 bits made its error frame unencodable (orjson raised, the
connection task failed, the connection closed unanswered). `error_frame` now falls back to
the code and a plain message, as the API socket's `encode_error` does, and an id the
envelope does not admit (past 2^53 - 1, negative, over 128 characters) is never echoed,
on either socket."""

from __future__ import annotations

import orjson
import pytest
import trio
from trio_websocket import open_websocket_url

from maia.core import MaiaError
from maia.observe._frames import error_frame
from tests.maia.node._raw import hello, open_observation_socket, request
from tests.maia.node.conftest import LiveNode
from tests.maia.node.conftest import node as node  # a Node on a real loopback socket

HUGE = "123456789012345678901234567890"
REFUSED_IDS = [HUGE, "-" + HUGE, "-1", "9007199254740992", '"' + "x" * 129 + '"']


@pytest.mark.parametrize(
    "details",
    [{"path": "a\ud800b"}, {"limit": 2**70}, {"nested": {1: "x"}}, {"x": {"\udc00": 1}}],
)
def test_error_frame_never_raises(details: dict[str, object]) -> None:
    """Details orjson cannot write: the code, a plain message, empty details."""
    for request_id in (7, 2**70, "r\ud800", None):
        error = MaiaError("invalid_request", "the request is malformed: \ud800", details)
        answer = orjson.loads(error_frame(request_id, error))
        assert answer["ok"] is False
        assert answer["id"] == {7: 7, "r\ud800": "r?"}.get(request_id)
        assert answer["error"]["code"] == "invalid_request"
        assert answer["error"]["details"] == {}
        assert answer["error"]["message"] == "the request is malformed: ?"


@pytest.mark.parametrize("bad_id", REFUSED_IDS)
async def test_a_duplicate_key_with_an_unadmitted_id_is_answered(
    node: LiveNode, bad_id: str
) -> None:
    """Before the hello: invalid_request naming the repeated key, no id; the connection
    stays, and the hello then succeeds."""
    frame = '{"id": ' + bad_id + ', "method": "node.hello", "params": {"a": 1, "a": 2}}'
    async with open_observation_socket(node.port, node.auth) as stream:
        answer = await request(stream, frame)
        assert answer["ok"] is False
        assert answer["id"] is None
        assert answer["error"]["code"] == "invalid_request"
        assert answer["error"]["details"] == {"path": "params.a"}
        assert (await hello(stream))["ok"]


async def test_after_the_hello_the_subscribe_error_is_a_frame(node: LiveNode) -> None:
    """The subscribe request with a huge id and a repeated key: its error frame arrives
    (then the Node closes the connection, as after any subscribe error)."""
    frame = '{"id": ' + HUGE + ', "method": "observe.events", "params": {"limit": 1, "limit": 2}}'
    async with open_observation_socket(node.port, node.auth) as stream:
        assert (await hello(stream))["ok"]
        answer = await request(stream, frame)
        assert (answer["id"], answer["error"]["code"], answer["error"]["details"]) == (
            None, "invalid_request", {"path": "params.limit"})  # fmt: skip


@pytest.mark.parametrize("bad_id", REFUSED_IDS)
async def test_the_api_socket_echoes_no_unadmitted_id(node: LiveNode, bad_id: str) -> None:
    """The API socket, which kept its connection already: no id it does not admit."""
    frame = '{"id": ' + bad_id + ', "method": "node.status", "params": {"a": 1, "a": 2}}'
    async with open_websocket_url(node.url, extra_headers=node.auth) as ws:
        assert (await hello(ws))["ok"]
        answer = await request(ws, frame)
        assert (answer["id"], answer["error"]["code"], answer["error"]["details"]) == (
            None, "invalid_request", {"path": "params.a"})  # fmt: skip
        with trio.fail_after(10):
            assert (await request(ws, '{"id": 2, "method": "node.status"}'))["ok"]
