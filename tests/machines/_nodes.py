"""Two real Node processes on 127.0.0.1 with separate homes: a Control Node with a machine
listener and Execution Nodes connecting out to it, and `maia ...` against either."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from actors.machine import TRACE_ENV
from maia.client import read_discovery
from simulations import TraceVerdict, check_trace, merge_traces, read_trace

MAIA = [sys.executable, "-c", "import sys; from maia.cli import main; sys.exit(main())"]
TIMEOUT_S = 90
_LISTEN = re.compile(rb"machine link listening on ws://127\.0\.0\.1:(\d+)/machines/v1")


def _env(home: Path) -> dict[str, str]:
    env = {**os.environ, "MAIA_HOME": str(home), "NO_COLOR": "1"}
    env.pop("MAIA_NODE", None)
    return env


class NodeProc:
    """One `python -m maia.node start` process, its output in `<home>.log`, its machine
    trace (`MAIA_MACHINE_TRACE`) in `<home>.trace.jsonl`."""

    def __init__(self, home: Path, *flags: str) -> None:
        self.home = home
        self.log_path = home.with_suffix(".log")
        self.trace_path = home.with_suffix(".trace.jsonl")
        self.flags = flags
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> NodeProc:
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "maia.node", "start", "--home", str(self.home),
                 *self.flags], stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                env={**os.environ, TRACE_ENV: str(self.trace_path)},
            )  # fmt: skip
        pid = self.process.pid
        wait_for(lambda: (r := read_discovery(self.home / "node.json")) is not None
                 and r.pid == pid, "the Node did not start", self)  # fmt: skip
        return self

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def machines_port(self) -> int:
        found: list[int] = []

        def listening() -> bool:
            match = _LISTEN.findall(self.log_path.read_bytes())
            found[:] = [int(m) for m in match]
            return bool(found)

        wait_for(listening, "the machine listener did not start", self)
        return found[-1]

    def maia(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        done = subprocess.run([*MAIA, *args], capture_output=True, text=True, env=_env(self.home),
                              timeout=TIMEOUT_S, stdin=subprocess.DEVNULL, check=False)  # fmt: skip
        if check:
            assert done.returncode == 0, f"maia {' '.join(args)}: {done.stderr}{done.stdout}"
        return done

    def call(self, *args: str) -> Any:
        """`maia ARGS --json`'s result."""
        return json.loads(self.maia(*args, "--json").stdout)["result"]

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def kill9(self) -> None:
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)


def stop_pair(control: NodeProc, execution: NodeProc | None) -> None:
    """A test's end: the Execution Node stopped (SIGTERM: it stops its workers and tells
    Control while the link may still carry it), then the Control Node killed. Control's own
    stop would wait 25 s for each placed worker's stop confirmation over the link it has
    just closed; it runs no process of its own, so a kill leaves nothing behind."""
    try:
        if execution is not None:
            execution.stop()
    finally:
        if control.process is not None and control.process.poll() is None:
            control.kill9()


def wait_for(condition: Callable[[], bool], message: str, node: NodeProc | None = None,
             timeout_s: float = 60.0) -> None:  # fmt: skip
    """Poll `condition` every 0.1 s, bounded; fail with `message` and the Node's log."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return
        if node is not None and node.process is not None and node.process.poll() is not None:
            break
        time.sleep(0.1)
    raise AssertionError(f"{message}\n{node.log()[-3000:] if node else ''}")


def enroll(control: NodeProc, name: str) -> str:
    """`maia machine enroll --name NAME --yes`'s one-time token."""
    result = control.call("machine", "enroll", "--name", name, "--yes")
    token: str = result["token"]
    return token


def link_of(control: NodeProc, name: str) -> dict[str, Any]:
    link: dict[str, Any] = control.call("machine", "show", name)["machine"]["link"]
    return link


@contextmanager
def enrolled_pair(
    base: Path, config: str | None = None, execution_dir: str = "execution"
) -> Iterator[tuple[NodeProc, NodeProc, str]]:
    """A Control Node (its home `base/control`, with `config` as its config.jsonc) and an
    Execution Node enrolled and connected as `box`, and a Project at `base/project`: yields
    (control, execution, project ID); both stopped at the end (`stop_pair`)."""
    home = base / "control"
    home.mkdir(mode=0o700)
    if config is not None:
        (home / "config.jsonc").write_text(config)
    control = NodeProc(home, "--machines-listen", "127.0.0.1:0").start()
    execution: NodeProc | None = None
    try:
        port = control.machines_port()
        token = base / "token.txt"
        token.write_text(enroll(control, "box"))
        execution = NodeProc(base / execution_dir, "--execution", "--control",
                             f"ws://127.0.0.1:{port}", "--enrollment-file", str(token))  # fmt: skip
        execution.start()
        wait_for(lambda: link_of(control, "box").get("heartbeats", 0) >= 1,
                 "the Execution Node did not connect", control)  # fmt: skip
        project = base / "project"
        project.mkdir()
        project_id = control.call("project", "add", str(project))["project"]["projectId"]
        yield control, execution, project_id
    finally:
        stop_pair(control, execution)


def checked_traces(*nodes: NodeProc, extra: Path | None = None) -> TraceVerdict:
    """The Nodes' machine traces (and `extra`), merged by the host's monotonic clock and
    judged by the simulation's checker; fails naming every violation."""
    traces = [read_trace(node.trace_path) for node in nodes if node.trace_path.exists()]
    if extra is not None and extra.exists():
        traces.append(read_trace(extra))
    verdict = check_trace(merge_traces(*traces))
    assert verdict.violations == (), verdict.violations
    return verdict


def trace_events(node: NodeProc, event: str) -> list[dict[str, Any]]:
    """The events of one kind in the Node's trace."""
    if not node.trace_path.exists():
        return []
    return [e for e in read_trace(node.trace_path) if e["event"] == event]
