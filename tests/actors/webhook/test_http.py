"""One delivery attempt over real HTTP to a receiver on 127.0.0.1 (allow-listed), through a
connector that refuses anything off loopback before a packet leaves."""

from __future__ import annotations

import base64
import time

import pytest
import trio

from actors.webhook import (
    HttpxClient,
    SendKind,
    SendResult,
    classify,
    delivery_body,
    parse_allow_addresses,
    parse_retry_after,
    resolve_destination,
    signed_headers,
)

from ._receiver import LoopbackOnlyConnector, Receiver, static_resolver

ALLOW = parse_allow_addresses(["127.0.0.1/32"])
SECRET = "whsec_" + base64.b64encode(b"k" * 32).decode()
RESOLVER = static_resolver({"receiver.test": ["127.0.0.1"]})


async def _post(
    receiver: Receiver, host: str = "127.0.0.1", timeout_s: float = 15.0
) -> tuple[SendResult, LoopbackOnlyConnector]:
    destination = await resolve_destination(f"http://{host}:{receiver.port}/in", ALLOW, RESOLVER)
    body = delivery_body("turn.completed", 1_764_460_800_000, {"turnId": "turn_1"})
    now_ms = time.time_ns() // 1_000_000  # the receiver checks it against real time
    headers = signed_headers(base64.b64decode(SECRET[6:]), "msg_1", now_ms, body)
    connector = LoopbackOnlyConnector()
    result = await HttpxClient(connector, timeout_s=timeout_s).post(
        destination, headers, body, now_ms
    )
    return result, connector


@pytest.mark.parametrize(
    ("status", "kind"),
    [(200, SendKind.SUCCEEDED), (204, SendKind.SUCCEEDED), (500, SendKind.FAILED),
     (410, SendKind.GONE), (302, SendKind.FAILED), (404, SendKind.FAILED)],
)  # fmt: skip
async def test_status_decides_the_outcome(
    nursery: trio.Nursery, status: int, kind: SendKind
) -> None:
    """Only 2xx succeeds, 410 is gone, a redirect is a failure (and is not followed)."""
    receiver = Receiver(
        script=[status], secret=SECRET, extra_headers=[("location", "http://127.0.0.1:1/")]
    )
    await nursery.start(receiver.serve)
    result, connector = await _post(receiver)
    assert result.kind is kind
    assert result.status_code == status
    assert len(receiver.received) == 1
    assert len(connector.attempts) == 1  # no redirect followed
    got = receiver.received[0]
    assert got.verified is True  # the standardwebhooks library accepts the signature
    assert (got.method, got.target) == ("POST", "/in")
    assert got.headers["content-type"] == "application/json"


async def test_host_header_names_the_checked_name(nursery: trio.Nursery) -> None:
    """A name is resolved once; the connection goes to its address, Host keeps the name."""
    receiver = Receiver(script=[200])
    await nursery.start(receiver.serve)
    result, connector = await _post(receiver, host="receiver.test")
    assert result.kind is SendKind.SUCCEEDED
    assert connector.attempts == [("127.0.0.1", receiver.port)]
    assert receiver.received[0].headers["host"] == f"receiver.test:{receiver.port}"


async def test_retry_after_is_read_from_429(nursery: trio.Nursery) -> None:
    """A 429 with Retry-After: 120 asks the schedule to wait two minutes."""
    receiver = Receiver(script=[429], extra_headers=[("retry-after", "120")])
    await nursery.start(receiver.serve)
    result, _ = await _post(receiver)
    assert (result.kind, result.retry_after_ms) == (SendKind.FAILED, 120_000)


async def test_a_hanging_receiver_is_cut_off(nursery: trio.Nursery) -> None:
    """A receiver that never answers ends the attempt at the client's bound, as a timeout."""
    receiver = Receiver(script=[None])
    await nursery.start(receiver.serve)
    with trio.fail_after(30):
        result, _ = await _post(receiver, timeout_s=0.5)
    assert (result.kind, result.reason) == (SendKind.FAILED, "timeout")


async def test_nothing_listening_is_a_failed_attempt() -> None:
    """A refused connection is a failure with a reason, never an exception."""
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    await listeners[0].aclose()
    destination = await resolve_destination(f"http://127.0.0.1:{port}/", ALLOW, RESOLVER)
    result = await HttpxClient(LoopbackOnlyConnector()).post(destination, (), b"{}", 0)
    assert result.kind is SendKind.FAILED
    assert result.reason.startswith("connect_failed")


def test_retry_after_forms() -> None:
    """Retry-After in seconds or as an HTTP date; capped at 10 h; junk is ignored."""
    now = 1_764_460_800_000  # Sun, 30 Nov 2025 00:00:00 GMT
    assert parse_retry_after("5", now) == 5000
    assert parse_retry_after("Sun, 30 Nov 2025 00:01:00 GMT", now) == 60_000
    assert parse_retry_after("999999", now) == 36_000_000
    assert parse_retry_after("soon", now) is None
    assert classify(503, "7", now).retry_after_ms == 7000
    assert classify(500, "7", now).retry_after_ms is None  # only 429 and 503 carry it


async def test_proxy_variables_are_ignored(
    nursery: trio.Nursery, monkeypatch: pytest.MonkeyPatch
) -> None:
    """HTTP_PROXY and friends cannot carry a delivery elsewhere: it goes to the checked
    address, and the would-be proxy (also on loopback) sees nothing."""
    receiver, proxy = Receiver(script=[204]), Receiver(script=[200])
    await nursery.start(receiver.serve)
    await nursery.start(proxy.serve)
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "all_proxy"):
        monkeypatch.setenv(name, f"http://127.0.0.1:{proxy.port}")
    result, connector = await _post(receiver)
    assert result.kind is SendKind.SUCCEEDED
    assert connector.attempts == [("127.0.0.1", receiver.port)]
    assert proxy.received == []
