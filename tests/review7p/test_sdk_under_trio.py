"""The SDK under trio (s7-pipe's trio Event and CancelScope waits, b9d28f9, and its direct
frame writes, 7f8ef66): requests cancelled mid-way among many concurrent ones, an answer
that comes after its deadline, and a connection the server ends in the middle of an answer.
Each request gets its own answer or a clear typed error, never another request's answer."""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
import pytest
import trio
from wsproto import ConnectionType, WSConnection
from wsproto.events import TextMessage

from maia.client import open_client
from maia.protocol import MaiaError
from tests.maia.client._greeting import greet
from tests.maia.node.conftest import LiveNode

Script = Callable[[trio.SocketStream, WSConnection, "list[dict[str, Any]]"], Awaitable[None]]


class ScriptedServer:
    """One loopback WebSocket connection: the upgrade and the hello answered, then `script`
    runs with the requests read so far passed as they come (`requests`)."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.port = 0
        self.done = trio.Event()

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        listener = (await trio.open_tcp_listeners(0, host="127.0.0.1"))[0]
        self.port = listener.socket.getsockname()[1]
        task_status.started()
        async with listener:
            stream = await listener.accept()
        async with stream:
            ws = WSConnection(ConnectionType.SERVER)
            requests: list[dict[str, Any]] = []
            with trio.fail_after(30):
                await greet(stream, ws)
                await self.script(stream, ws, requests)
        self.done.set()


def _answer(ws: WSConnection, request_id: Any, result: Any) -> bytes:
    body = {"id": request_id, "ok": True, "result": result}
    return ws.send(TextMessage(orjson.dumps(body).decode()))


async def _read_requests(
    stream: trio.SocketStream, ws: WSConnection, requests: list[dict[str, Any]], count: int
) -> None:
    while len(requests) < count:
        data = await stream.receive_some(65536)
        assert data, "the client closed"
        ws.receive_data(data)
        requests += [orjson.loads(e.data) for e in ws.events() if isinstance(e, TextMessage)]


async def test_an_answer_after_its_deadline_is_not_taken_for_the_next_request(
    nursery: trio.Nursery,
) -> None:
    """Request A times out (the server holds its answer); then the server answers A late
    and B at once, in one write: B returns B's answer, and A's late answer is dropped."""

    async def late(stream: trio.SocketStream, ws: WSConnection, requests: list[Any]) -> None:
        await _read_requests(stream, ws, requests, 2)  # A, then B sent after A timed out
        first, second = requests
        await stream.send_all(
            _answer(ws, first["id"], {"for": first["params"]["name"]})
            + _answer(ws, second["id"], {"for": second["params"]["name"]})
        )
        await _read_requests(stream, ws, requests, 3)
        third = requests[2]
        await stream.send_all(_answer(ws, third["id"], {"for": third["params"]["name"]}))

    server = ScriptedServer(late)
    await nursery.start(server.serve)
    url = f"ws://127.0.0.1:{server.port}/api/v1"
    async with open_client(url, token="0" * 64, timeout_s=0.5) as client:
        with pytest.raises(MaiaError) as caught:
            await client.request("no.such_op", {"name": "A"})
        assert caught.value.code == "deadline_exceeded"
        with trio.fail_after(20):
            assert await client.request("no.such_op", {"name": "B"}) == {"for": "B"}
            assert await client.request("no.such_op", {"name": "C"}) == {"for": "C"}
        with trio.fail_after(20):
            await server.done.wait()


async def test_a_connection_ended_mid_answer_fails_every_waiting_request(
    nursery: trio.Nursery,
) -> None:
    """Eight requests wait; the server writes half of an answer frame to the first, then
    closes TCP: each of the eight raises `unavailable` (not a deadline, not an answer), and
    the next call raises `unavailable` at once."""

    async def cut(stream: trio.SocketStream, ws: WSConnection, requests: list[Any]) -> None:
        await _read_requests(stream, ws, requests, 8)
        frame = _answer(ws, requests[0]["id"], {"for": "x" * 1000})
        await stream.send_all(frame[: len(frame) // 2])

    server = ScriptedServer(cut)
    await nursery.start(server.serve)
    url = f"ws://127.0.0.1:{server.port}/api/v1"
    outcomes: list[str] = []
    async with open_client(url, token="0" * 64, timeout_s=30) as client:

        async def one(index: int) -> None:
            try:
                outcomes.append(repr(await client.request("no.such_op", {"name": index})))
            except MaiaError as error:
                outcomes.append(error.code)

        with trio.fail_after(20):
            async with trio.open_nursery() as inner:
                for index in range(8):
                    inner.start_soon(one, index)
        assert outcomes == ["unavailable"] * 8
        with trio.fail_after(5), pytest.raises(MaiaError) as caught:
            await client.request("no.such_op", {})
        assert caught.value.code == "unavailable"


async def test_many_concurrent_requests_with_cancels_each_get_their_own_answer(
    node: LiveNode,
) -> None:
    """16 tasks x 40 requests at a real Node, three methods with answers told apart
    (node.status, session.list, an unknown method's error), a seeded third of them
    cancelled after a random 0-3 ms: every request that finishes gets its own method's
    answer (or `overloaded`: a cancelled request stays in flight at the Node), and the
    client serves on."""
    rng = random.Random(7)
    methods = ["node.status", "session.list", "no.such_op"]
    plan = [
        [(rng.choice(methods), rng.random() * 0.003 if rng.random() < 0.33 else None)
         for _ in range(40)]
        for _ in range(16)
    ]  # fmt: skip
    wrong: list[str] = []
    counts = {"answered": 0, "cancelled": 0}
    async with open_client(node.url, token=node.token) as client:
        status = await client.request("node.status")
        listed = await client.request("session.list")
        assert set(status) != set(listed)

        def check(method: str, outcome: Any) -> None:
            if isinstance(outcome, MaiaError) and outcome.code == "overloaded":
                return
            if method == "no.such_op":
                ok = isinstance(outcome, MaiaError) and outcome.code == "unknown_method"
            elif method == "node.status":
                ok = isinstance(outcome, dict) and set(outcome) == set(status)
            else:
                ok = isinstance(outcome, dict) and set(outcome) == set(listed)
            if not ok:
                wrong.append(f"{method}: {outcome!r}"[:200])

        async def lane(steps: list[tuple[str, float | None]]) -> None:
            for method, cancel_after in steps:
                with trio.move_on_after(cancel_after if cancel_after is not None else 60) as s:
                    try:
                        outcome: Any = await client.request(method)
                    except MaiaError as error:
                        outcome = error
                if s.cancelled_caught:
                    counts["cancelled"] += 1
                    continue
                counts["answered"] += 1
                check(method, outcome)

        with trio.fail_after(120):
            async with trio.open_nursery() as inner:
                for steps in plan:
                    inner.start_soon(lane, steps)
        assert wrong == []
        assert counts["answered"] > 400
        assert counts["cancelled"] > 0
        assert set(await client.request("node.status")) == set(status)
