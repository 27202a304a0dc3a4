"""Launching a Session's worker: executor to `WorkerSpec`, epochs from storage, attempt rows,
and the sweep of workers a dead Node left behind.

Epochs come from the storage counter (`next_worker_epoch`), so an epoch is never reused
across Node restarts. Each attempt is recorded with its pid as soon as it is spawned; the
worker's environment carries `MAIA_WORKER_ATTEMPT=<attempt id>`, which is how a later Node
recognizes a leftover process as its own (a pid alone may have been reused by then), together
with `MAIA_WORKER_SCOPE=<realpath of the database>` (a Node on a restored backup knows the
original's attempt ids, but its workers are not its own). A process whose environment cannot
be read is left alone.
"""

from __future__ import annotations

import os
import signal
import sqlite3
from collections.abc import Mapping

import attrs
import orjson
import psutil

from maia.config import ExecutorConfig
from supervision.workers import WorkerSpec
from worker_bridge.workers.agents import MODULES, worker_launch

ECHO_MODULE = "worker_bridge.workers.echo"
EXEC_MODULE = "worker_bridge.workers.exec"
ATTEMPT_MARKER = "MAIA_WORKER_ATTEMPT"
SCOPE_MARKER = "MAIA_WORKER_SCOPE"  # the realpath of the home's database (actors/_workers.py)
AGENT_KINDS = frozenset(MODULES)  # prompted with tools=True: they ask maia.approval


def state_dir(store_path: str, session_id: str) -> str:
    """The Session's own directory in the home, for a worker's memory across turns and
    attempts (`<home>/sessions/<sessionId>/state`; the exec worker creates it 0700)."""
    home = os.path.dirname(os.path.realpath(store_path))
    return os.path.join(home, "sessions", session_id, "state")


def worker_spec(
    executor: ExecutorConfig, cwd: str, environ: Mapping[str, str], *, max_output_bytes: int,
    session_id: str | None = None, state: str | None = None,
    conversation_id: str | None = None,
) -> WorkerSpec:  # fmt: skip
    """The launch of `executor` in `cwd`; `environ` supplies the allow-listed variables;
    the activation names the Session and its state directory. `max_output_bytes`
    (maxOutputBytesPerTool) bounds the output an exec command's run keeps, or the
    executor's own `maxOutputBytes` when smaller: past it the program is stopped and the
    turn fails. An agent kind (claude-code, codex, acp) also gets the harness conversation
    stored with the Session as `activation.conversationId`, so a restarted worker resumes
    it."""
    env = {name: environ[name] for name in executor.env if name in environ}
    activation = {k: v for k, v in (("sessionId", session_id), ("stateDir", state)) if v}
    if executor.kind == "echo":
        return WorkerSpec.python_module(ECHO_MODULE, cwd=cwd, env=env, activation=activation)
    if executor.kind in AGENT_KINDS:
        module, options = worker_launch(executor.kind, executor.options, executor.argv)
        if conversation_id:
            activation["conversationId"] = conversation_id
        return WorkerSpec.python_module(module, cwd=cwd, env=env, options=options,
                                        activation=activation)  # fmt: skip
    # The exec worker's options: the argv, and which of its variables the program gets.
    options = {
        "argv": orjson.dumps(list(executor.argv)).decode(),
        "maxOutputBytes": str(min(max_output_bytes, executor.max_output_bytes or max_output_bytes)),
    }
    if executor.env:
        options["passEnv"] = ",".join(executor.env)
    if not executor.prompt_newline:
        options["promptNewline"] = "false"
    return WorkerSpec.python_module(
        EXEC_MODULE, cwd=cwd, env=env, options=options, activation=activation
    )


def record_attempt(conn: sqlite3.Connection, *, attempt_id: str, session_id: str, epoch: int,
                   node_epoch: int, pid: int, now: int) -> None:  # fmt: skip
    conn.execute(
        "INSERT INTO worker_attempts (attempt_id, session_id, epoch, node_epoch, state, pid,"
        " started_ms) VALUES (?, ?, ?, ?, 'running', ?, ?)",
        (attempt_id, session_id, epoch, node_epoch, pid, now),
    )


def end_attempt(conn: sqlite3.Connection, attempt_id: str, reason: str, now: int) -> None:
    conn.execute(
        "UPDATE worker_attempts SET state = 'exited', ended_ms = ?, end_reason = ?"
        " WHERE attempt_id = ? AND ended_ms IS NULL",
        (now, reason[:200], attempt_id),
    )


@attrs.frozen
class Leftover:
    attempt_id: str
    pid: int
    started_ms: int


def open_attempts(conn: sqlite3.Connection, node_epoch: int) -> list[Leftover]:
    """Attempts of earlier Node runs that never recorded an end."""
    rows = conn.execute(
        "SELECT attempt_id, pid, started_ms FROM worker_attempts"
        " WHERE ended_ms IS NULL AND node_epoch < ? AND pid IS NOT NULL",
        (node_epoch,),
    ).fetchall()
    return [Leftover(r[0], r[1], r[2]) for r in rows]


def _is_ours(process: psutil.Process, leftover: Leftover, scope: str) -> bool:
    """Whether `process` is the leftover's worker of this home: it carries the attempt's
    marker and this store's scope (a Node on a restored backup shares the attempt ids of
    the original's live workers, never their scope). An environment we cannot read is
    not ours."""
    try:
        env = process.environ()
    except psutil.Error:
        return False
    return env.get(ATTEMPT_MARKER) == leftover.attempt_id and env.get(SCOPE_MARKER) == scope


def kill_leftovers(leftovers: list[Leftover], scope: str) -> list[int]:
    """SIGKILL the process group of each leftover that is still our worker (its attempt's
    marker and `scope`, the realpath of this home's database); returns the pids.

    Blocking (reads /proc): run it in a thread.
    """
    killed = []
    for leftover in leftovers:
        try:
            process = psutil.Process(leftover.pid)
            if process.status() == psutil.STATUS_ZOMBIE or not _is_ours(process, leftover, scope):
                continue
            tree = process.children(recursive=True)
            try:
                os.killpg(leftover.pid, signal.SIGKILL)  # a worker leads its own group
            except (ProcessLookupError, PermissionError):
                process.kill()
            for child in tree:
                try:
                    if _is_ours(child, leftover, scope):
                        child.kill()
                except psutil.Error:
                    continue
            killed.append(leftover.pid)
        except psutil.Error:
            continue
    return killed
