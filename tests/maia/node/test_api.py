"""The API over real loopback sockets: the upgrade gate, the envelope, typed errors."""

from __future__ import annotations

import orjson
import pytest
import trio
from trio_websocket import open_websocket_url

from maia.client._transport import open_websocket
from maia.node import MAX_FRAME_BYTES

from ._raw import hello, raw_upgrade, request
from .conftest import LiveNode


def _headers(node: LiveNode, **extra: str) -> dict[str, str]:
    return {"Host": f"127.0.0.1:{node.port}", "Authorization": f"Bearer {node.token}", **extra}


async def test_valid_upgrade_is_accepted(node: LiveNode) -> None:
    """The raw request the refusal tests vary is itself a good one: 101 Switching Protocols."""
    status, _ = await raw_upgrade(node.port, _headers(node))
    assert status == 101


@pytest.mark.parametrize(
    ("change", "status", "code"),
    [
        ({"Authorization": None}, 401, "unauthenticated"),
        ({"Authorization": "Bearer " + "0" * 64}, 401, "unauthenticated"),
        ({"Authorization": "Basic dXNlcjpwYXNz"}, 401, "unauthenticated"),
        ({"Origin": "http://localhost:3000"}, 403, "unauthenticated"),
        ({"Origin": "null"}, 403, "unauthenticated"),
        ({"Host": "evil.example:{port}"}, 421, "invalid_request"),
        ({"Host": "127.0.0.1.nip.io:{port}"}, 421, "invalid_request"),
        ({"Host": "localhost:1"}, 421, "invalid_request"),
    ],
)
async def test_refusals_happen_before_the_upgrade(
    node: LiveNode, change: dict[str, str | None], status: int, code: str
) -> None:
    """No token, a wrong token, a browser Origin, a foreign Host: HTTP error, typed body."""
    headers = _headers(node)
    for name, value in change.items():
        if value is None:
            headers.pop(name)
        else:
            headers[name] = value.format(port=node.port)
    got, response = await raw_upgrade(node.port, headers)
    assert got == status
    assert b"upgrade: websocket" not in response.lower()
    body = orjson.loads(response.split(b"\r\n\r\n", 1)[1])
    assert body["error"]["code"] == code


async def test_wrong_path_is_refused(node: LiveNode) -> None:
    """Only /api/v1 upgrades."""
    status, _ = await raw_upgrade(node.port, _headers(node), path="/other")
    assert status == 404


@pytest.mark.parametrize("host", ["localhost", "[::1]"])
async def test_every_loopback_name_is_accepted(node: LiveNode, host: str) -> None:
    """localhost:port and [::1]:port are loopback names too."""
    status, _ = await raw_upgrade(node.port, _headers(node, Host=f"{host}:{node.port}"))
    assert status == 101


async def test_hello_reports_identity(node: LiveNode) -> None:
    """node.hello answers the node ID, epoch, protocol, registry digest and capabilities."""
    async with open_websocket_url(node.url, extra_headers=node.auth) as ws:
        answer = await hello(ws)
    assert answer["ok"] is True
    result = answer["result"]
    assert result["nodeId"] == node.running.node_id
    assert result["epoch"] == node.running.epoch
    assert result["protocol"] == "maia.protocol/v1alpha1"
    assert result["registryMatch"] is True
    assert "sessions" in result["capabilities"]


async def test_protocol_mismatch_is_refused(node: LiveNode) -> None:
    """A client speaking another protocol version gets protocol_incompatible."""
    async with open_websocket_url(node.url, extra_headers=node.auth) as ws:
        frame = {"id": 1, "method": "node.hello", "params": {"protocol": "maia.protocol/v0"}}
        answer = await request(ws, orjson.dumps(frame).decode())
        assert answer["error"]["code"] == "protocol_incompatible"
        assert answer["error"]["details"] == {
            "client": "maia.protocol/v0",
            "node": "maia.protocol/v1alpha1",
        }
        # The connection is still usable: a correct hello now succeeds.
        assert (await hello(ws))["ok"] is True


async def test_a_second_hello_is_refused_and_the_connection_goes_on(node: LiveNode) -> None:
    """After the hello another node.hello is invalid_request naming the method, as on the
    observation socket, and changes nothing: the connection still answers requests."""
    async with open_websocket_url(node.url, extra_headers=node.auth) as ws:
        assert (await hello(ws))["ok"] is True
        frame = {"id": 9, "method": "node.hello", "params": {"protocol": "maia.protocol/v0"}}
        second = await request(ws, orjson.dumps(frame).decode())
        assert second["id"] == 9
        assert second["error"]["code"] == "invalid_request"
        assert second["error"]["details"]["method"] == "node.hello"
        assert "already answered" in second["error"]["message"]
        assert (await request(ws, '{"id": 10, "method": "node.status"}'))["ok"] is True


BAD_FRAMES = [
    ("{not json", None, "invalid_request"),
    ('{"id": 1, "id": 2, "method": "node.status"}', None, "invalid_request"),
    ('{"id": 7, "method": "node.status", "params": {"x": NaN}}', None, "invalid_request"),
    ("[" * 10_000 + "]" * 10_000, None, "invalid_request"),
    ('{"id": 3, "method": "no.such.op"}', 3, "unknown_method"),
    ('{"id": 4, "method": "node.status", "params": {"extra": 1}}', 4, "validation_failed"),
    ('{"id": 5, "method": "node.hello", "params": {"protocol": 5}}', 5, "invalid_request"),  # a 2nd
    ('{"id": 6, "method": "node.status", "params": []}', 6, "validation_failed"),
    ('{"id": 8, "method": "node.status", "extra": true}', 8, "invalid_request"),
    ('{"method": "node.status"}', None, "invalid_request"),
    ('{"id": 9, "method": "session.create", "params": {}}', 9, "validation_failed"),
]


async def test_bad_frames_get_typed_errors_and_the_node_keeps_serving(node: LiveNode) -> None:
    """Invalid JSON, unknown method/field, wrong type: typed errors; other connections served."""
    async with (
        open_websocket_url(node.url, extra_headers=node.auth) as bad,
        open_websocket_url(node.url, extra_headers=node.auth) as good,
    ):
        assert (await hello(bad))["ok"]
        assert (await hello(good))["ok"]
        for number, (frame, answer_id, code) in enumerate(BAD_FRAMES):
            answer = await request(bad, frame)
            assert answer["ok"] is False, frame[:40]
            assert answer["id"] == answer_id
            assert answer["error"]["code"] == code, (frame[:40], answer)
            assert set(answer["error"]) == {"code", "message", "retryable", "details"}
            status = await request(good, f'{{"id": {number}, "method": "node.status"}}')
            assert status["ok"] is True
            assert status["id"] == number
        # The bad connection itself is still open and useful.
        assert (await request(bad, '{"id": "s", "method": "node.status"}'))["ok"] is True


async def test_validation_error_names_the_field(node: LiveNode) -> None:
    """A wrong type is refused with the path of the field in the message and details."""
    async with open_websocket_url(node.url, extra_headers=node.auth) as ws:
        frame = '{"id": 1, "method": "node.hello", "params": {"protocol": 5}}'
        answer = await request(ws, frame)
    assert answer["error"]["details"]["path"] == "protocol"
    assert answer["error"]["message"].startswith("protocol: ")


async def test_request_before_hello_is_refused(node: LiveNode) -> None:
    """Any op before node.hello answers hello_required; after the hello it works."""
    async with open_websocket_url(node.url, extra_headers=node.auth) as ws:
        answer = await request(ws, '{"id": 1, "method": "node.status"}')
        assert answer["error"]["code"] == "hello_required"
        assert (await hello(ws))["ok"] is True
        assert (await request(ws, '{"id": 2, "method": "node.status"}'))["ok"] is True


async def test_session_ops_are_served_through_the_dispatcher(node: LiveNode) -> None:
    """The Session handlers registered by op ID answer over the API (here: a typed not-found)."""
    async with open_websocket_url(node.url, extra_headers=node.auth) as ws:
        await hello(ws)
        frame = '{"id": 1, "method": "session.show", "params": {"sessionId": "session_abc"}}'
        answer = await request(ws, frame)
    assert answer["error"]["code"] == "resource_not_found"


async def test_oversize_frame_closes_with_1009_and_others_are_served(node: LiveNode) -> None:
    """A frame over 1 MiB closes that connection (1009, frame_too_large); the Node serves on."""
    async with open_websocket_url(node.url, extra_headers=node.auth) as good:
        assert (await hello(good))["ok"]
        bad = await open_websocket(node.url, headers=node.auth)
        try:
            await bad.send('{"id": 0, "method": "node.hello", "params": {"protocol": "x"}}')
            assert await bad.receive() is not None
            big = '{"id": 1, "method": "node.status", "params": {"x": "' + "a" * MAX_FRAME_BYTES
            await bad.send(big + '"}}')
            with trio.fail_after(10):
                assert await bad.receive() is None
            assert bad.close_code == 1009
        finally:
            await bad.aclose()
        assert (await request(good, '{"id": 2, "method": "node.status"}'))["ok"] is True


async def test_requests_on_one_connection_run_concurrently(node: LiveNode) -> None:
    """Many requests in flight on one connection all get their own answer by id."""
    async with open_websocket_url(node.url, extra_headers=node.auth) as ws:
        await hello(ws)
        for number in range(20):
            await ws.send_message(f'{{"id": {number}, "method": "node.status"}}')
        seen = set()
        with trio.fail_after(10):
            for _ in range(20):
                answer = orjson.loads(await ws.get_message())
                assert answer["ok"] is True
                seen.add(answer["id"])
    assert seen == set(range(20))


async def test_status_reports_storage_and_counts(node: LiveNode) -> None:
    """node.status: identity, epoch, storage ok, counts and the storage mailbox."""
    async with open_websocket_url(node.url, extra_headers=node.auth) as ws:
        await hello(ws)
        status = (await request(ws, '{"id": 1, "method": "node.status"}'))["result"]
    assert status["nodeId"] == node.running.node_id
    assert status["storage"]["integrity"] == "ok"
    assert status["sessionsByState"] == {}
    assert status["queuedTurns"] == 0
    assert status["liveWorkers"] == 0
    assert [box["name"] for box in status["mailboxes"]] == ["storage"]
