"""The review's real Node: `python -m maia.node start` in a process of its own (restartable),
asked over a raw `/api/v1` WebSocket on loopback, with the few set-ups the tests share (a
Project, a Session, a turn)."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from maia.core import read_discovery, read_token
from maia.protocol import REGISTRY
from tests._node_process import NodeProcess
from tests.maia.node._raw import port_of
from tests.review8a._wire import RawApi

_IDS = itertools.count(1)
WAIT_S = 30  # a generous bound on a real-clock wait


class Api:
    """One greeted connection; `call` answers the result or raises AssertionError."""

    def __init__(self, node: NodeProcess) -> None:
        record = read_discovery(node.home / "node.json")
        assert record is not None
        self.raw = RawApi(port_of(record.url), read_token(node.home / "node.token"))
        self.raw.hello()

    def ask(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The whole answer envelope."""
        return self.raw.ask({"id": next(_IDS), "method": method, "params": params})

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        answer = self.ask(method, params)
        assert answer["ok"] is True, answer
        result: dict[str, Any] = answer["result"]
        return result

    def error(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """The error of a call that must fail; its code must be one the op declares."""
        answer = self.ask(method, params)
        assert answer["ok"] is False, answer
        error: dict[str, Any] = answer["error"]
        declared = REGISTRY.get(method)
        assert declared is not None
        assert error["code"] in declared.errors, (method, error, declared.errors)
        return error

    def project(self, root: Path) -> str:
        root.mkdir(parents=True, exist_ok=True)
        added = self.call("project.add", {"commandId": command(), "rootPath": str(root)})
        return str(added["project"]["projectId"])

    def session(self, project_id: str, **more: Any) -> dict[str, Any]:
        body = {"commandId": command(), "projectId": project_id, **more}
        created: dict[str, Any] = self.call("session.create", body)["session"]
        return created

    def show(self, session_id: str) -> dict[str, Any]:
        found: dict[str, Any] = self.call("session.show", {"sessionId": session_id})["session"]
        return found

    def wait_session(self, session_id: str, **what: Any) -> dict[str, Any]:
        """session.wait repeated until satisfied (bounded by WAIT_S)."""
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            answer = self.call(
                "session.wait", {"sessionId": session_id, "waitMilliseconds": 4000, **what}
            )
            if answer["satisfied"]:
                found: dict[str, Any] = answer["session"]
                return found
        raise AssertionError(f"session {session_id} never reached {what}")

    def close(self) -> None:
        self.raw.close()


def command() -> str:
    return f"cmd-{next(_IDS)}-{time.monotonic_ns()}"


@contextmanager
def real_node(tmp_path: Path, config: str = "{}") -> Iterator[NodeProcess]:
    """A started Node on `tmp_path/home` (its own process), stopped at the end."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    if config != "{}":
        (home / "config.jsonc").write_text(config)
    node = NodeProcess(home, {})
    node.start()
    try:
        yield node
    finally:
        node.stop()


@contextmanager
def api_of(node: NodeProcess) -> Iterator[Api]:
    api = Api(node)
    try:
        yield api
    finally:
        api.close()
