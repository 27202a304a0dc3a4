"""Dispatch: handler registration by op ID, caller roles, deadline, internal errors, overload."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
import trio
from trio_websocket import open_websocket_url

from maia.node import MAX_IN_FLIGHT, ApiServer, Call, Dispatcher, HandlerTable, Pending
from maia.protocol import REGISTRY, MaiaError

from ._raw import hello, raw_upgrade


def _call(method: str, role: str = "local-user") -> Call:
    return Call(role=role, method=method, connection_id=1, services=None)


def test_handler_for_unknown_op_is_refused_at_registration() -> None:
    """Registering a handler for an op the registry does not know raises at import time."""
    table = HandlerTable()
    with pytest.raises(LookupError, match=r"no\.such\.op"):
        table.handler("no.such.op")


def test_second_handler_for_one_op_is_refused() -> None:
    """One handler per op ID."""
    table = HandlerTable()

    @table.handler("node.status")
    async def first(call: Call, params: Any) -> Any:
        return None

    with pytest.raises(ValueError, match="already has a handler"):
        table.handler("node.status")


def test_dispatcher_refuses_a_table_built_on_another_registry() -> None:
    """A handler table with an op this registry lacks is refused when the Dispatcher is built."""

    class Wider:
        def get(self, op_id: str) -> Any:
            return REGISTRY.get("node.status") if op_id == "extra.op" else REGISTRY.get(op_id)

        def resolve(self, name: str) -> tuple[Any, Any]:
            return self.get(name), None

    table = HandlerTable(Wider())

    @table.handler("extra.op")
    async def extra(call: Call, params: Any) -> Any:
        return None

    with pytest.raises(LookupError, match=r"extra\.op"):
        Dispatcher(table)


async def test_unknown_method_and_missing_handler() -> None:
    """Unknown ops answer unknown_method; registered ops without handler, not implemented."""
    dispatcher = Dispatcher(HandlerTable())
    with pytest.raises(MaiaError) as unknown:
        await dispatcher.dispatch(_call("no.such.op"), {})
    assert unknown.value.code == "unknown_method"
    with pytest.raises(MaiaError) as missing:
        await dispatcher.dispatch(_call("node.status"), {})
    assert missing.value.code == "command_not_implemented"


async def test_caller_role_is_checked() -> None:
    """A role the op's descriptor does not allow gets role_denied before the handler runs."""
    table = HandlerTable()
    ran = []

    @table.handler("node.status")
    async def status(call: Call, params: Any) -> Any:
        ran.append(call)

    with pytest.raises(MaiaError) as denied:
        await Dispatcher(table).dispatch(_call("node.status", role="machine"), {})
    assert denied.value.code == "role_denied"
    assert ran == []


async def test_slow_handler_hits_the_deadline(autojump_clock: trio.testing.MockClock) -> None:
    """A handler that outlives the 5 s deadline answers deadline_exceeded."""
    table = HandlerTable()

    @table.handler("node.status")
    async def status(call: Call, params: Any) -> Any:
        await trio.sleep_forever()

    with pytest.raises(MaiaError) as late:
        await Dispatcher(table).dispatch(_call("node.status"), {})
    assert late.value.code == "deadline_exceeded"
    assert late.value.details["ms"] == 5000


async def test_handler_crash_is_an_internal_error() -> None:
    """An unexpected exception in a handler becomes internal_error, not a dead connection."""
    table = HandlerTable()

    @table.handler("node.status")
    async def status(call: Call, params: Any) -> Any:
        raise RuntimeError("boom")

    with pytest.raises(MaiaError) as crashed:
        await Dispatcher(table).dispatch(_call("node.status"), {})
    assert crashed.value.code == "internal_error"
    assert "boom" not in crashed.value.message


async def test_more_than_max_in_flight_is_overloaded(nursery: trio.Nursery) -> None:
    """Over MAX_IN_FLIGHT requests in flight on one connection, the excess gets overloaded."""
    release = trio.Event()
    table = HandlerTable()

    @table.handler("node.hello")
    async def node_hello(call: Call, params: Any) -> Any:
        from maia.node._ops import NodeHelloOutput

        return NodeHelloOutput(
            node_id="node_1",
            epoch=1,
            protocol="maia.protocol/v1alpha1",
            registry_digest=REGISTRY.digest,
            version="0",
            capabilities=(),
            registry_match=True,
        )

    @table.handler("node.status")
    async def node_status(call: Call, params: Any) -> Any:
        await release.wait()
        raise MaiaError("unavailable", "released", {})

    server = ApiServer(Dispatcher(table), None, token="t" * 64)
    port = await nursery.start(server.serve, 0)
    auth = [(b"Authorization", b"Bearer " + b"t" * 64)]
    async with open_websocket_url(f"ws://127.0.0.1:{port}/api/v1", extra_headers=auth) as ws:
        assert (await hello(ws))["ok"]
        extra = 5
        for number in range(MAX_IN_FLIGHT + extra):
            await ws.send_message(orjson.dumps({"id": number, "method": "node.status"}).decode())
        codes: list[str] = []
        with trio.fail_after(10):
            for _ in range(extra):
                codes.append(orjson.loads(await ws.get_message())["error"]["code"])
            release.set()
            for _ in range(MAX_IN_FLIGHT):
                codes.append(orjson.loads(await ws.get_message())["error"]["code"])
    assert codes[:extra] == ["overloaded"] * extra
    assert codes[extra:] == ["unavailable"] * MAX_IN_FLIGHT


async def test_connections_beyond_the_limit_are_refused_before_the_upgrade(
    nursery: trio.Nursery,
) -> None:
    """With max_connections open, the next upgrade gets HTTP 503 overloaded; then it frees."""
    server = ApiServer(Dispatcher(HandlerTable()), None, token="t" * 64, max_connections=2)
    port = await nursery.start(server.serve, 0)
    auth = [(b"Authorization", b"Bearer " + b"t" * 64)]
    url = f"ws://127.0.0.1:{port}/api/v1"
    headers = {"Host": f"127.0.0.1:{port}", "Authorization": "Bearer " + "t" * 64}
    async with (
        open_websocket_url(url, extra_headers=auth),
        open_websocket_url(url, extra_headers=auth),
    ):
        status, response = await raw_upgrade(port, headers)
        assert status == 503
        assert b'"overloaded"' in response
    with trio.fail_after(10):
        while server.statistics().connections:  # noqa: ASYNC110 (a counter, no event to wait on)
            await trio.sleep(0.01)
    status, _ = await raw_upgrade(port, headers)
    assert status == 101


def _hello_output() -> Any:
    from maia.node._ops import NodeHelloOutput

    return NodeHelloOutput(
        node_id="node_1",
        epoch=1,
        protocol="maia.protocol/v1alpha1",
        registry_digest=REGISTRY.digest,
        version="0",
        capabilities=(),
        registry_match=True,
    )


async def test_a_plain_handler_is_answered_by_begin() -> None:
    """A plain-function handler's answer comes encoded from `begin` (no task, no scope);
    its crash is an internal_error there too."""
    table = HandlerTable()

    @table.handler("node.hello")
    def node_hello(call: Call, params: Any) -> Any:
        return _hello_output()

    @table.handler("node.status")
    def node_status(call: Call, params: Any) -> Any:
        raise RuntimeError("boom")

    dispatcher = Dispatcher(table)
    answer = dispatcher.begin(_call("node.hello"), {"protocol": "maia.protocol/v1alpha1"})
    assert not isinstance(answer, Pending)
    assert answer["nodeId"] == "node_1"
    with pytest.raises(MaiaError) as crashed:
        dispatcher.begin(_call("node.status"), {})
    assert crashed.value.code == "internal_error"


async def test_a_plain_handler_that_returns_an_awaitable_keeps_the_deadline(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A plain handler that has to wait returns an awaitable: `begin` leaves it Pending and
    `finish` awaits it under the 5 s deadline."""
    table = HandlerTable()

    @table.handler("node.status")
    def node_status(call: Call, params: Any) -> Any:
        async def wait() -> None:
            await trio.sleep_forever()

        return wait()

    dispatcher = Dispatcher(table)
    pending = dispatcher.begin(_call("node.status"), {})
    assert isinstance(pending, Pending)
    with pytest.raises(MaiaError) as late:
        await dispatcher.finish(_call("node.status"), pending)
    assert late.value.code == "deadline_exceeded"


async def test_an_answer_at_once_does_not_wait_behind_one_in_flight(nursery: trio.Nursery) -> None:
    """On one connection, a request that waits runs in its own task while a later one whose
    handler answers at once is answered first."""
    release = trio.Event()
    table = HandlerTable()

    @table.handler("node.hello")
    def node_hello(call: Call, params: Any) -> Any:
        return _hello_output()

    @table.handler("node.status")
    async def node_status(call: Call, params: Any) -> Any:
        await release.wait()
        raise MaiaError("unavailable", "released", {})

    @table.handler("session.show")
    def session_show(call: Call, params: Any) -> Any:
        raise MaiaError("resource_not_found", "no such Session", {"path": "sessionId"})

    server = ApiServer(Dispatcher(table), None, token="t" * 64)
    port = await nursery.start(server.serve, 0)
    auth = [(b"Authorization", b"Bearer " + b"t" * 64)]
    async with open_websocket_url(f"ws://127.0.0.1:{port}/api/v1", extra_headers=auth) as ws:
        assert (await hello(ws))["ok"]
        await ws.send_message('{"id": 1, "method": "node.status"}')
        at_once = {"id": 2, "method": "session.show", "params": {"sessionId": "session_abc"}}
        await ws.send_message(orjson.dumps(at_once).decode())
        with trio.fail_after(10):
            first = orjson.loads(await ws.get_message())
            release.set()
            second = orjson.loads(await ws.get_message())
    assert (first["id"], first["error"]["code"]) == (2, "resource_not_found")
    assert (second["id"], second["error"]["code"]) == (1, "unavailable")
