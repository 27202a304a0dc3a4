"""A real Node for the agent end-to-end tests: a fresh (or, started again, the same) home
with a config.jsonc, and an environment whose only network peer is a loopback mock."""

from __future__ import annotations

import os
import signal
import sqlite3
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests._node_process import serving_node
from tests.maia.cli._node import Cli
from tests.worker_bridge.agents._sse_server import SseServer, serve

WAIT_S = 60


def node_home(base: Path, config: str, env: dict[str, str]) -> tuple[Cli, dict[str, str]]:
    """`base/home` with `config` (written once: a second call is the same home) and
    `base/project`, as a Cli; this process's environment with `env` added, less
    CLAUDECODE (set when the tests run inside Claude Code)."""
    home, project = base / "home", base / "project"
    project.mkdir(exist_ok=True)
    if not home.exists():
        home.mkdir(mode=0o700)
        (home / "config.jsonc").write_text(config, encoding="utf-8")
    environment = {**os.environ, **env}
    environment.pop("CLAUDECODE", None)
    return Cli(home, project), environment


@contextmanager
def node_with(base: Path, config: str, env: dict[str, str]) -> Iterator[Cli]:
    """A foreground Node on `base/home` with `env` added to its environment; stopped on
    exit. A second start on the same `base` is a Node restart."""
    cli, environment = node_home(base, config, env)
    home = cli.home
    argv = [sys.executable, "-m", "maia.node", "start", "--home", str(home)]
    with (
        (base / "node.stderr").open("ab") as log,  # kept for a failing test's reader
        serving_node(argv, home, stderr=log, env=environment),
    ):
        yield cli


@contextmanager
def agent_session(
    base: Path,
    config: str,
    env_for: Callable[[SseServer], dict[str, str]],
    script: Any,
    executor: str,
) -> Iterator[Cli]:
    """A Node whose environment (`env_for` its mock) reaches only the loopback mock serving
    `script`, with a Session `agent` on `executor`."""
    with serve(script) as server, node_with(base, config, env_for(server)) as node:
        created = node("session", "create", "--title", "agent", "--executor", executor)
        assert created.returncode == 0, created.stderr
        yield node


def run(cli: Cli, *args: str, codes: tuple[int, ...] = (0,)) -> dict[str, Any]:
    import json

    done = cli(*args, "--json")
    assert done.returncode in codes, (args, done.stdout, done.stderr)
    result: dict[str, Any] = json.loads(done.stdout)["result"]
    return result


def send(cli: Cli, text: str, session: str = "agent") -> str:
    return str(run(cli, "turn", "send", session, text)["turn"]["turnId"])


def wait_turn(cli: Cli, turn_id: str) -> dict[str, Any]:
    """turn.show once the turn ended (bounded)."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        result = run(cli, "turn", "wait", turn_id, codes=(0, 5))  # 5: it did not complete
        if result["satisfied"]:
            return run(cli, "turn", "show", turn_id)
    raise AssertionError(f"turn {turn_id} did not end")


def waiting_session(cli: Cli, session: str = "agent") -> dict[str, Any]:
    """session.show once the Session waits on an approval (bounded)."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        shown: dict[str, Any] = run(cli, "session", "show", session)["session"]
        if shown["state"] == "waiting-approval":
            return shown
        time.sleep(0.2)
    raise AssertionError("the Session never waited for an approval")


def _db(cli: Cli) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{cli.home / 'maia.db'}?mode=ro", uri=True)


def conversation_id(cli: Cli) -> str:
    with _db(cli) as conn:
        row = conn.execute("SELECT conversation_id FROM sessions").fetchone()
    return str(row[0])


def worker_pid(cli: Cli) -> int:
    with _db(cli) as conn:
        row = conn.execute(
            "SELECT pid FROM worker_attempts WHERE ended_ms IS NULL ORDER BY started_ms DESC"
        ).fetchone()
    return int(row[0])


def kill_worker(cli: Cli) -> None:
    """SIGKILL the Session's worker (its process group); return once the Node saw it die."""
    os.killpg(worker_pid(cli), signal.SIGKILL)
    deadline = time.monotonic() + WAIT_S
    # A Session between turns is idle already: its activity says when no worker is left.
    while run(cli, "session", "show", "agent")["session"]["activity"] != "stopped":
        assert time.monotonic() < deadline, "the Node never saw the worker die"
        time.sleep(0.2)


def turn_tokens(shown: dict[str, Any]) -> tuple[int, int]:
    """(inputTokens, outputTokens) of a shown turn's usage."""
    usage = shown["turn"]["usage"]
    return usage["inputTokens"], usage["outputTokens"]
