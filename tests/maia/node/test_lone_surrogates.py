"""The issue's reproductions: a lone surrogate escape anywhere fails its own request only,
as `validation_failed` naming the path, on both sockets."""

from __future__ import annotations

import orjson
import pytest
import trio
from trio_websocket import open_websocket_url

from ._raw import hello, open_observation_socket, request
from .conftest import LiveNode

HELLO_PARAMS = '"protocol": "maia.protocol/v1alpha1"'


@pytest.mark.parametrize(
    ("frame", "path", "answered_id"),
    [
        ('{"id": "\\ud800", "method": "node.status"}', "id", None),
        ('{"id": 7, "method": "project.add", "params": {"rootPath": "/tmp/\\udc00"}}',
         "params.rootPath", 7),
        ('{"id": 8, "method": "session.create", "params": {"\\ud800": 1}}', "params.<key>", 8),
        ('{"id": 9, "method": "session.create", "params": {"title": "a\\udfffb"}}',
         "params.title", 9),
        ('{"id": 10, "method": "turn.send", "params": {"sessionId": "s", "text": "\\ud800"}}',
         "params.text", 10),
    ],
)  # fmt: skip
async def test_a_lone_surrogate_fails_its_request_only(
    node: LiveNode, frame: str, path: str, answered_id: int | None
) -> None:
    """validation_failed naming the path; the same connection and a bystander go on."""
    async with (
        open_websocket_url(node.url, extra_headers=node.auth) as bystander,
        open_websocket_url(node.url, extra_headers=node.auth) as ws,
    ):
        assert (await hello(bystander))["ok"]
        assert (await hello(ws))["ok"]
        answer = await request(ws, frame)
        assert answer["ok"] is False
        assert answer["id"] == answered_id
        assert answer["error"]["code"] == "validation_failed"
        assert answer["error"]["details"]["path"] == path
        assert (await request(ws, '{"id": 2, "method": "node.status"}'))["ok"]
        assert (await request(bystander, '{"id": 3, "method": "node.status"}'))["ok"]


async def test_a_lone_surrogate_before_hello_is_refused(node: LiveNode) -> None:
    """In node.hello's protocol, before any hello: validation_failed, then a hello works."""
    async with open_websocket_url(node.url, extra_headers=node.auth) as ws:
        bad = '{"id": 1, "method": "node.hello", "params": {"protocol": "\\ud800"}}'
        answer = await request(ws, bad)
        assert answer["error"]["code"] == "validation_failed"
        assert answer["error"]["details"]["path"] == "params.protocol"
        assert (await hello(ws))["ok"]


@pytest.mark.parametrize(
    ("frame", "path"),
    [
        ('{"id": "\\ud800", "method": "observe.events"}', "id"),
        ('{"id": 1, "method": "\\udc00"}', "method"),
        ('{"id": 1, "method": "observe.events", "params": {"\\ud800": 1}}', "params.<key>"),
    ],
)
async def test_a_lone_surrogate_on_the_observation_socket(
    node: LiveNode, frame: str, path: str
) -> None:
    """The observation socket answers validation_failed; the API socket is unaffected."""
    async with open_websocket_url(node.url, extra_headers=node.auth) as bystander:
        assert (await hello(bystander))["ok"]
        async with open_observation_socket(node.port, node.auth) as stream:
            await stream.send_message(frame)
            with trio.fail_after(10):
                answer = orjson.loads(await stream.get_message())
        assert answer["error"]["code"] == "validation_failed"
        assert answer["error"]["details"]["path"] == path
        assert (await request(bystander, '{"id": 3, "method": "node.status"}'))["ok"]
