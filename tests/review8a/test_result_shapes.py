"""The answers of a real Node process, over the blocking client, against the registry's own
result schemas (`maia.protocol` `operation_schema(op, "result")`, the schemas
docs/protocol.md is generated from; JSON Schema 2020-12, unknown fields refused): the
mutations a first session makes and every read op a client uses on their objects. And
each refusal met on the way against the op's error schema."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema

from maia.client import MaiaError, connect_sync, read_discovery, read_token
from maia.protocol import REGISTRY
from maia.protocol._documents import operation_schema
from tests._node_process import running_node

CONFIG = '{"executors": {"echo": {"kind": "echo"}}}'


def _conforms(op_id: str, answer: Any) -> None:
    descriptor = REGISTRY.get(op_id)
    assert descriptor is not None, op_id
    validator = jsonschema.Draft202012Validator(operation_schema(descriptor, "result"))
    problems = [(list(e.path), e.message[:200]) for e in validator.iter_errors(answer)]
    assert not problems, (op_id, problems)


def _refusal_conforms(op_id: str, error: MaiaError) -> None:
    descriptor = REGISTRY.get(op_id)
    assert descriptor is not None, op_id
    envelope = {"ok": False, "error": error.to_wire()}
    validator = jsonschema.Draft202012Validator(operation_schema(descriptor, "output"))
    problems = [(list(e.path), e.message[:200]) for e in validator.iter_errors(envelope)]
    assert not problems, (op_id, problems)


def test_answers_fit_the_registry_s_result_schemas(tmp_path: Path) -> None:
    """project.add, session.create, turn.send (with its wait), session.rename, then
    node.hello/status, session.list/show/wait, turn.list/show/wait/queue.list,
    events.read, receipt.list/get, approval/routine/webhooks list, config.show,
    reference.resolve: each answer validates; refusals validate as the op's errors."""
    (tmp_path / "project").mkdir()
    with running_node(tmp_path, CONFIG, {}) as node:
        discovery = read_discovery(node.home / "node.json")
        assert discovery is not None
        token = read_token(node.home / "node.token")
        with connect_sync(discovery.url, token=token, timeout_s=30) as client:

            def call(op_id: str, **params: Any) -> Any:
                answer = client.request(op_id, params)
                _conforms(op_id, answer)
                return answer

            project = call("project.add", commandId="p1", rootPath=str(tmp_path / "project"))
            project_id = project["project"]["projectId"]
            created = call(
                "session.create", commandId="s1", projectId=project_id,
                executor="user:echo", title="shapes", labels=["review"],
            )  # fmt: skip
            session_id = created["session"]["sessionId"]
            sent = call(
                "turn.send", commandId="t1", sessionId=session_id, text="hi",
                waitMilliseconds=4000,
            )  # fmt: skip
            turn_id = sent["turn"]["turnId"]
            call("turn.send", commandId="t1", sessionId=session_id, text="hi")  # duplicate
            call("session.rename", commandId="r1", sessionId=session_id, title="shapes two")
            _conforms("node.hello", client.hello)  # the connection's one hello
            call("node.status")
            call("session.list")
            call("session.list", labels=["review"], limit=1)
            call("session.show", sessionId=session_id)
            call("session.wait", sessionId=session_id, states=["idle"], waitMilliseconds=0)
            call("turn.list", sessionId=session_id)
            call("turn.show", turnId=turn_id)
            call("turn.wait", turnId=turn_id, waitMilliseconds=0)
            call("turn.queue.list", sessionId=session_id)
            page = call("events.read", position={"kind": "start"}, limit=50)
            call("events.read", position={"kind": "cursor", "cursor": page["nextCursor"]})
            receipts = call("receipt.list")
            call("receipt.get", receiptId=receipts["receipts"][0]["receiptId"])
            call("receipt.get", commandId="t1")
            call("approval.list")
            call("routine.list")
            call("webhooks.list")
            call("config.show")
            call("project.list")
            call("reference.resolve", kind="session", reference="shapes two")
            refusals = [
                ("session.show", {"sessionId": "session_" + "0" * 32}),
                ("turn.send", {"commandId": "t1", "sessionId": session_id, "text": "other"}),
                ("turn.cancel", {"commandId": "c1", "turnId": turn_id, "expectedRevision": 1}),
            ]
            for op_id, params in refusals:
                try:
                    client.request(op_id, params)
                except MaiaError as error:
                    _refusal_conforms(op_id, error)
                else:
                    raise AssertionError(f"{op_id} {params} was not refused")
