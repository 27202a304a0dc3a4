"""The errors every op may answer (`COMMON_ERRORS`), probed the same way for each op.

`tests/fixtures/ops/_common.json` names a probe for each common error, or says why it is
unreachable. A probe either reaches its error through the op's own Node, or finds the
condition that makes it unreachable for this op (the op admits every role the API
presents; the op is served), and then answers the reason the file gives.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import attrs
import orjson
import trio

from maia.node import HANDLERS, LOCAL_USER_ROLE, MAX_IN_FLIGHT
from maia.protocol import COMMON_ERRORS, OperationDescriptor

from ._format import FixtureFormatError
from ._node import Connection, LiveNode
from ._schemas import error_problems

API_ROLES = frozenset({LOCAL_USER_ROLE})  # what `/api/v1` presents (maia/node/_server.py)
UNKNOWN_FIELD = "conformanceUnknownField"


@attrs.frozen
class CommonPlan:
    """For each common error: a probe name and the reason it may be unreachable."""

    probes: Mapping[str, str]
    reasons: Mapping[str, str]


def load_common(path: Path) -> CommonPlan:
    """Read `_common.json`. Raises FixtureFormatError when a common error is not named."""
    try:
        raw = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError) as error:
        raise FixtureFormatError(f"{path}: {error}") from None
    probes, reasons = raw.get("probes", {}), raw.get("unreachable", {})
    for code in COMMON_ERRORS:
        if code not in probes and len(str(reasons.get(code, "")).strip()) < 20:
            raise FixtureFormatError(f"{path}: common error {code} has no probe nor reason")
    unknown = sorted(set(probes.values()) - set(PROBES))
    if unknown:
        raise FixtureFormatError(f"{path}: unknown probe {unknown[0]!r}")
    return CommonPlan(probes, reasons)


@attrs.frozen
class Probed:
    reached: bool
    problem: str | None = None  # a probe that expected to reach its error and did not


Probe = Callable[[LiveNode, Connection, OperationDescriptor], Awaitable[Probed]]


def _check(op: OperationDescriptor, answer: dict[str, Any], code: str) -> Probed:
    error = answer.get("error")
    if answer.get("ok") or not isinstance(error, dict) or error.get("code") != code:
        return Probed(False, f"want {code}, got {answer}")
    problems = error_problems(op, error)
    return Probed(True, "; ".join(problems) or None)


async def _envelope(node: LiveNode, conn: Connection, op: OperationDescriptor) -> Probed:
    answer = await conn.send_raw({"method": op.operation_id, "params": {}, "extra": 1})
    return _check(op, answer, "invalid_request")


async def _unknown_field(node: LiveNode, conn: Connection, op: OperationDescriptor) -> Probed:
    if op.operation_id == "node.hello":  # only a connection's first: another is refused
        async with node.connect(greet=False) as fresh:
            answer = await fresh.request(op.operation_id, {UNKNOWN_FIELD: 1})
    else:
        answer = await conn.request(op.operation_id, {UNKNOWN_FIELD: 1})
    probed = _check(op, answer, "validation_failed")
    if probed.reached and answer["error"]["details"].get("path") != UNKNOWN_FIELD:
        return Probed(True, f"validation_failed names {answer['error']['details']}")
    return probed


async def _bad_token(node: LiveNode, conn: Connection, op: OperationDescriptor) -> Probed:
    key = base64.b64encode(os.urandom(16)).decode()
    head = (f"GET /api/v1 HTTP/1.1\r\nHost: 127.0.0.1:{node.port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
            f"Authorization: Bearer not-the-token\r\n\r\n")  # fmt: skip
    response = b""
    with trio.fail_after(10):
        stream = await trio.open_tcp_stream("127.0.0.1", node.port)
        async with stream:
            await stream.send_all(head.encode())
            while not response.endswith(b"}"):
                chunk = await stream.receive_some(65536)
                if not chunk:
                    break
                response += chunk
    status = response.split(b" ", 2)[1] if response.count(b" ") >= 2 else b""
    body = orjson.loads(response.split(b"\r\n\r\n", 1)[1]) if b"\r\n\r\n{" in response else {}
    if status != b"401":
        return Probed(False, f"a wrong bearer token got HTTP {status!r}, not 401")
    return _check(op, body, "unauthenticated")


async def _role(node: LiveNode, conn: Connection, op: OperationDescriptor) -> Probed:
    if op.callers >= API_ROLES:
        return Probed(False)  # every role the API presents may call it: unreachable
    return _check(op, await conn.request(op.operation_id, {}), "role_denied")


async def _served(node: LiveNode, conn: Connection, op: OperationDescriptor) -> Probed:
    if HANDLERS.get(op.operation_id) is not None:
        return Probed(False)  # the op is served: unreachable
    return _check(op, await conn.request(op.operation_id, {}), "command_not_implemented")


async def _in_flight(node: LiveNode, conn: Connection, op: OperationDescriptor) -> Probed:
    """MAX_IN_FLIGHT session.waits that cannot be satisfied for 4 s hold a connection of its
    own at its cap; the op's request on it is then refused before it is read."""
    root = node.work / "in-flight-probe"
    root.mkdir(exist_ok=True)
    added = await conn.request("project.add", {"commandId": f"probe-{op.operation_id}",
                                               "rootPath": str(root)})  # fmt: skip
    project_id = added["result"]["project"]["projectId"]
    created = await conn.request("session.create", {"commandId": f"probe-{op.operation_id}",
                                                    "projectId": project_id})  # fmt: skip
    wait = {"sessionId": created["result"]["session"]["sessionId"], "states": ["failed"],
            "waitMilliseconds": 4000}  # fmt: skip
    async with node.connect() as held:
        for _ in range(MAX_IN_FLIGHT):
            await held.send_only("session.wait", wait)
        return _check(op, await held.request(op.operation_id, {}), "overloaded")


PROBES: dict[str, Probe] = {
    "in-flight": _in_flight,
    "envelope": _envelope,
    "unknown-field": _unknown_field,
    "bad-token": _bad_token,
    "role": _role,
    "served": _served,
}


async def probe_common(plan: CommonPlan, node: LiveNode, conn: Connection,
                       op: OperationDescriptor, by_cases: set[str]
                       ) -> tuple[set[str], dict[str, str], list[str]]:  # fmt: skip
    """(reached, unreachable code -> reason, failures) of the op's common errors (those its
    cases reached, `by_cases`, are not probed)."""
    reached: set[str] = set()
    unreachable: dict[str, str] = {}
    failures: list[str] = []
    for code in COMMON_ERRORS:
        if code in by_cases:
            continue
        name = plan.probes.get(code)
        if name is None:
            unreachable[code] = plan.reasons[code]
            continue
        probed = await PROBES[name](node, conn, op)
        if probed.problem is not None:
            failures.append(f"common {code} ({name} probe): {probed.problem}")
        elif probed.reached:
            reached.add(code)
        elif code in plan.reasons:
            unreachable[code] = plan.reasons[code]
        else:
            failures.append(f"common {code}: the {name} probe cannot reach it and no reason")
    return reached, unreachable, failures
