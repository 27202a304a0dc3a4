"""Arbitrary frames at a real Control Node's machine socket: each fails at most itself.

Random JSON, frames of every known type with junk or missing fields, statuses and lease
requests naming unknown assignments, epochs and requests, lone surrogates and huge
integers. After each batch the same link still answers a well-formed lease request (with a
`refused`: the assignment is unknown), the Node process is up, and the machine's row is
what it was: nothing a peer sent changed it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import asynccontextmanager
from typing import Any

import orjson
import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st
from trio_websocket import wrap_client_stream

from ._nodes import NodeProc, enroll

LONE = ["\ud800", "\udfff"]
TEXT = st.one_of(st.text(max_size=8), st.sampled_from(LONE), st.just("machine_" + "0" * 32))
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.integers(2**63, 2**200),
                    st.floats(allow_nan=False, allow_infinity=False), TEXT)  # fmt: skip
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(TEXT, inner, max_size=3), max_leaves=8)  # fmt: skip
TYPES = [
    "enroll",
    "hello",
    "status",
    "lease_request",
    "grant",
    "welcome",
    "worker",
    "turn_event",
    "nope",
]


@st.composite
def frames(draw: st.DrawFn, machine_id: str) -> str:
    """One frame: junk, a known type with junk fields, or a well-shaped status or request
    naming things this Control Node never placed."""
    choice = draw(st.integers(0, 4))
    if choice == 0:
        value: Any = draw(VALUES)
    elif choice == 1:
        value = {"type": draw(st.sampled_from(TYPES)),
                 **draw(st.dictionaries(TEXT, VALUES, max_size=4))}  # fmt: skip
    elif choice == 2:
        value = {"type": "status", "status": {
            "nodeId": draw(st.sampled_from([machine_id, "machine_" + "1" * 32])),
            "registrationIncarnation": draw(st.integers(1, 3)),
            "reportSequence": draw(st.integers(1, 5)),
            "reports": [{"assignmentId": draw(TEXT), "leaseEpoch": draw(st.integers(1, 9)),
                         "phase": draw(st.sampled_from(["running", "stopped", "bogus"])),
                         "appliedRequestId": "r-1", "appliedRenewalSequence": 1,
                         "observedRevocationRevision": 0,
                         "spool": {"sourceId": "s", "lastSequence": 0, "acknowledgedThrough": 0,
                                   "truncatedThrough": 0, "retainedRecords": 0,
                                   "retainedBytes": 0, "oldestUnacknowledgedAgeMs": 0,
                                   "admission": "open"}}][: draw(st.integers(0, 1))],
        }}  # fmt: skip
    elif choice == 3:  # relay frames for attempts this Control Node never launched
        value = draw(st.sampled_from([
            {"type": "worker", "attemptId": "attempt_" + "0" * 32, "phase": "exited"},
            {"type": "turn_event", "attemptId": "attempt_" + "1" * 32, "turnId": "t",
             "kind": "completed", "sourceId": "s", "sequence": draw(st.integers(1, 9))},
        ]))  # fmt: skip
    else:
        value = {"type": "lease_request", "request": {
            "requestId": draw(TEXT), "nodeId": draw(st.sampled_from([machine_id, "other"])),
            "assignmentId": draw(TEXT), "leaseEpoch": draw(st.integers(-1, 2**60)),
            "kind": draw(st.sampled_from(["acquire", "renew", "steal"])),
        }}  # fmt: skip
    return json.dumps(value, ensure_ascii=True)


class Machine:
    def __init__(self, control: NodeProc, port: int, record: dict[str, Any]) -> None:
        self.control, self.port, self.record = control, port, record


@pytest.fixture(scope="module")
def machine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Machine]:
    """A Control Node process with one enrolled machine whose credential this test holds."""
    base = tmp_path_factory.mktemp("hostile")
    control = NodeProc(base / "control", "--machines-listen", "127.0.0.1:0").start()
    try:
        port = control.machines_port()
        token = enroll(control, "box")
        record = trio.run(_redeem, port, token)
        yield Machine(control, port, record)
    finally:
        control.stop()


@asynccontextmanager
async def _connect(port: int, path: str, headers: list[tuple[bytes, bytes]]) -> Any:
    """A client socket on our own TCP stream: trio-websocket's client never closes its
    socket when the server closes first, as the enroll path does."""
    async with (
        trio.open_nursery() as nursery,
        await trio.open_tcp_stream("127.0.0.1", port) as tcp,
    ):
        socket = await wrap_client_stream(nursery, tcp, f"127.0.0.1:{port}", path,
                                          extra_headers=headers)  # fmt: skip
        try:
            yield socket
        finally:
            await socket.aclose()
            nursery.cancel_scope.cancel()


async def _redeem(port: int, token: str) -> dict[str, Any]:
    async with _connect(port, "/machines/v1/enroll", _auth(token)) as socket:
        await socket.send_message(json.dumps({"type": "enroll", "token": token,
                                              "nodeId": "node_test"}))  # fmt: skip
        with trio.fail_after(30):
            answer: dict[str, Any] = orjson.loads(await socket.get_message())
    assert answer["type"] == "enrolled", answer
    return answer


def _auth(secret: str) -> list[tuple[bytes, bytes]]:
    return [(b"Authorization", f"Bearer {secret}".encode())]


async def _attack(machine: Machine, batch: list[str]) -> None:
    record = machine.record
    async with _connect(machine.port, "/machines/v1", _auth(record["credential"])) as socket:
        hello = {"type": "hello", "incarnation": record["incarnation"],
                 "credentialRevision": record["credentialRevision"],
                 "observedRevocationRevision": record["credentialRevision"],
                 "nodeId": "node_test"}  # fmt: skip
        await socket.send_message(json.dumps(hello))
        with trio.fail_after(30):
            assert orjson.loads(await socket.get_message())["type"] == "welcome"
        for frame in batch:
            await socket.send_message(frame)
        probe = {"type": "lease_request", "request": {
            "requestId": "probe-1", "nodeId": record["machineId"], "assignmentId": "nowhere",
            "leaseEpoch": 1, "kind": "acquire"}}  # fmt: skip
        await socket.send_message(json.dumps(probe))
        with trio.fail_after(30):
            while True:
                answer = orjson.loads(await socket.get_message())
                assert answer["type"] in ("error", "refused"), answer
                if answer.get("requestId") == "probe-1":
                    assert answer["reason"] == "unknown"
                    break


@settings(max_examples=40, deadline=None)
@given(data=st.data())
def test_no_frame_changes_anything_or_takes_the_node_down(machine: Machine, data: Any) -> None:
    """Hostile frames over an authenticated link: typed answers only, the link answers after,
    the Node is up and the machine row is unchanged."""
    batch = data.draw(st.lists(frames(machine.record["machineId"]), min_size=1, max_size=10))
    before = machine.control.call("machine", "show", "box")["machine"]
    trio.run(_attack, machine, batch)
    assert machine.control.process is not None
    assert machine.control.process.poll() is None
    after = machine.control.call("machine", "show", "box")["machine"]
    for key in ("state", "incarnation", "revocationRevision", "recoveryRequired", "revision"):
        assert after[key] == before[key], key


def test_no_upgrade_without_a_wellformed_bearer(machine: Machine) -> None:
    """No bearer, a browser Origin, or a token on the link path: HTTP refusals, no socket."""

    async def attempts() -> list[int]:
        from trio_websocket import ConnectionRejected

        statuses = []
        token_like = "mtok1.machine_" + "0" * 32 + ".1." + "A" * 43
        for headers in ([], [(b"Origin", b"http://evil.example"),
                             *_auth(machine.record["credential"])], _auth(token_like)):  # fmt: skip
            try:
                async with _connect(machine.port, "/machines/v1", headers):
                    statuses.append(101)
            except ConnectionRejected as rejected:
                statuses.append(rejected.status_code)
            except BaseExceptionGroup as group:  # raised inside our stream's nursery
                only = group.subgroup(ConnectionRejected)
                leaves = [] if only is None else list(only.exceptions)
                statuses.append(getattr(leaves[0], "status_code", 0) if len(leaves) == 1 else 0)
        return statuses

    assert trio.run(attempts) == [401, 403, 401]
