"""The exec worker: any command-line program as a Maia worker.

Per prompt it runs the configured argv in the worker's working directory (the Session's),
with the prompt on the program's stdin (ended with a newline unless `promptNewline` is
false: line-oriented programs such as `bc` ignore an unterminated last line) and a filtered
environment. Stdout streams back as message deltas; stderr lines become diagnostics; exit
status 0 completes the turn, anything else fails it. Output is bounded: past
`maxOutputBytes` the program is stopped and the turn fails.

The program runs in its own process group, and every stop signals the whole group: an
interrupt (or the Session's wall time, which arrives as one) sends SIGTERM to the group,
then SIGKILL after two seconds, so a script's background children end with it and the turn
reads `interrupted` (or `wall_time_exceeded`) within the Node's interrupt bound. Stdout is
read until end of file, but not longer than two seconds after the program exits: a
leftover that keeps the pipe open (a background child) is then killed with its group.

The program's environment: the basic set (PATH, HOME, LANG…), the variables named in
`passEnv` (their values come from the Node's environment), and Maia's own:
`MAIA_TURN_ID`, `MAIA_SESSION_ID`, `MAIA_STATE_DIR` (a directory that lives as long as
the Session, created 0700, for a script's own memory across turns) and the attempt markers
that let the supervisor's sweep find anything that escapes.

Configuration (initialize options, falling back to the environment):
`argv` / `MAIA_EXEC_ARGV` (a JSON array, required), `maxOutputBytes` /
`MAIA_EXEC_MAX_OUTPUT` (default 1 MiB), `passEnv` / `MAIA_EXEC_PASS_ENV` (comma-separated
variable names passed through besides the basic set), `promptNewline` /
`MAIA_EXEC_PROMPT_NEWLINE` (`false` sends the prompt exactly as typed). The Session comes
from the activation (`sessionId`, `stateDir`), falling back to `MAIA_SESSION_ID` and
`MAIA_STATE_DIR` in the worker's environment.
"""

from __future__ import annotations

import codecs
import contextlib
import json
import os
import select
import shlex
import signal
import subprocess
import threading
import time
from collections import deque

from worker_bridge._sdk import WorkerContext, run_worker
from worker_bridge._turn import Turn
from worker_bridge.workers._items import Items

VERSION = "1.1.0"
DEFAULT_MAX_OUTPUT = 1024 * 1024
BASIC_ENV = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR")
# Carried to the program so the supervisor's sweeps recognise what it leaves behind.
MARKERS = ("MAIA_WORKER_ATTEMPT", "MAIA_WORKER_SCOPE")
KILL_AFTER_S = 2.0  # SIGTERM to the group, then SIGKILL
DRAIN_AFTER_EXIT_S = 2.0  # how long stdout may stay open once the program has exited
POLL_S = 0.1
STDERR_TAIL_LINES = 20  # of the program's stderr, in a failed turn's message
STDERR_TAIL_CHARS = 2048


def _setting(context: WorkerContext, option: str, variable: str, default: str = "") -> str:
    return context.options.get(option) or os.environ.get(variable) or default


def _argv(context: WorkerContext) -> list[str]:
    raw = _setting(context, "argv", "MAIA_EXEC_ARGV")
    try:
        argv = json.loads(raw)
    except ValueError:
        argv = None
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        raise ValueError("the exec worker needs `argv` (a JSON array of strings)")
    return argv


def _private_dirs(path: str) -> None:
    """Every missing folder down to `path`, each 0700 (os.makedirs gives the mode to the
    last one only: `sessions/` and `sessions/<id>/` were left 0755)."""
    missing: list[str] = []
    folder = os.path.abspath(path)
    while not os.path.isdir(folder) and os.path.dirname(folder) != folder:
        missing.append(folder)
        folder = os.path.dirname(folder)
    for made in reversed(missing):
        with contextlib.suppress(FileExistsError):  # another worker made it meanwhile
            os.mkdir(made, 0o700)


def _session(context: WorkerContext) -> tuple[str | None, str | None]:
    """The Session ID and its state directory (created 0700), when the Node gave them."""
    session_id = context.activation.get("sessionId") or os.environ.get("MAIA_SESSION_ID")
    state_dir = context.activation.get("stateDir") or os.environ.get("MAIA_STATE_DIR")
    if isinstance(state_dir, str) and state_dir:
        _private_dirs(state_dir)
    else:
        state_dir = None
    return (session_id if isinstance(session_id, str) and session_id else None), state_dir


def _environment(context: WorkerContext, turn: Turn) -> dict[str, str]:
    extra = [n.strip() for n in _setting(context, "passEnv", "MAIA_EXEC_PASS_ENV").split(",")]
    names = [*BASIC_ENV, *(n for n in extra if n), *MARKERS]
    env = {name: os.environ[name] for name in names if name in os.environ}
    env["MAIA_WORKER_ATTEMPT"] = context.attempt_id
    env["MAIA_TURN_ID"] = turn.turn_id
    session_id, state_dir = _session(context)
    if session_id is not None:
        env["MAIA_SESSION_ID"] = session_id
    if state_dir is not None:
        env["MAIA_STATE_DIR"] = state_dir
    return env


def _prompt_bytes(context: WorkerContext, text: str) -> bytes:
    newline = _setting(context, "promptNewline", "MAIA_EXEC_PROMPT_NEWLINE", "true")
    if newline.strip().lower() != "false" and not text.endswith("\n"):
        text += "\n"
    return text.encode("utf-8")


def _feed(process: subprocess.Popen[bytes], data: bytes) -> None:
    assert process.stdin is not None
    try:
        process.stdin.write(data)
        process.stdin.close()
    except OSError:  # the program did not read its input: its business
        pass


def _drain_stderr(process: subprocess.Popen[bytes], turn: Turn, tail: deque[str]) -> None:
    assert process.stderr is not None
    for line in process.stderr:
        text = line[:4096].decode("utf-8", errors="replace").rstrip("\n")
        turn.diagnostic({"stream": "stderr", "line": text})
        tail.append(text)


def _with_stderr(message: str, tail: deque[str]) -> str:
    """A failure message with the program's last stderr lines, which usually say why."""
    text = "\n".join(tail)[-STDERR_TAIL_CHARS:]
    return f"{message}\nstderr (last lines):\n{text}" if text.strip() else message


def _note_stderr(context: WorkerContext, turn: Turn, tail: deque[str]) -> None:
    """A program that exits 0 but wrote to stderr (`bc` on `1/0`) leaves a `command` item
    with its last stderr lines, so `turn show` says what it complained about."""
    text = "\n".join(tail)[-STDERR_TAIL_CHARS:]
    if not text.strip():
        return
    command = shlex.join(_argv(context))
    Items(turn).completed(
        "command",
        text=f"{command} exited 0; stderr (last lines):\n{text}",
        command=command,
        exitCode=0,
        stderr=text,
    )


def _watch_interrupt(process: subprocess.Popen[bytes], turn: Turn, done: threading.Event) -> None:
    while not done.is_set():
        if turn.interrupted.wait(POLL_S):
            _stop(process)
            return


def _signal_group(process: subprocess.Popen[bytes], signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signum)  # the program leads its own group


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the program's group, SIGKILL after KILL_AFTER_S (or at once if the
    program itself is gone but its group lingers)."""
    if process.poll() is None:
        _signal_group(process, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(KILL_AFTER_S)
    _signal_group(process, signal.SIGKILL)


def handle(context: WorkerContext, turn: Turn) -> None:
    """Run the program once for this prompt."""
    argv = _argv(context)
    limit = int(_setting(context, "maxOutputBytes", "MAIA_EXEC_MAX_OUTPUT", "0") or 0)
    limit = limit or DEFAULT_MAX_OUTPUT
    try:
        env = _environment(context, turn)
    except OSError as exc:  # the state directory could not be made
        turn.fail(f"could not prepare the Session's state directory: {exc}")
        return
    try:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            start_new_session=True,
        )
    except OSError as exc:
        turn.fail(f"could not start {argv[0]}: {exc}", "launch_failed")
        return

    def kill_group() -> None:
        _signal_group(process, signal.SIGKILL)

    context.exit_hooks.append(kill_group)  # the worker exiting takes the program along
    try:
        _supervise(context, turn, process, limit)
    finally:
        context.exit_hooks.remove(kill_group)


def _read_output(turn: Turn, process: subprocess.Popen[bytes], limit: int) -> bool:
    """Stream stdout as deltas until end of file, or until DRAIN_AFTER_EXIT_S after the
    program exited. Returns whether the output passed `limit` (the program is then stopped).

    One trailing newline of the whole output is not part of the reply (as a shell's `$(...)`
    drops it): a program echoing its newline-ended prompt answers with the prompt itself. So a
    chunk's final newline is held back until more text follows it."""
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    held = ""
    assert process.stdout is not None
    fd = process.stdout.fileno()
    total = 0
    exited_at: float | None = None
    overflow = False
    while True:
        readable, _, _ = select.select([fd], [], [], POLL_S)
        if readable:
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            total += len(chunk)
            if total > limit:
                overflow = True
                _stop(process)
                break
            if text := held + decoder.decode(chunk):
                held = "\n" if text.endswith("\n") else ""
                if body := text.removesuffix(held):
                    turn.delta(body)
        elif process.poll() is not None:
            exited_at = exited_at if exited_at is not None else time.monotonic()
            if time.monotonic() - exited_at > DRAIN_AFTER_EXIT_S:
                _signal_group(process, signal.SIGKILL)  # a leftover holds the pipe open
                break
    tail = held + decoder.decode(b"", final=True)
    if tail := tail.removesuffix("\n"):
        turn.delta(tail)
    return overflow


def _supervise(
    context: WorkerContext, turn: Turn, process: subprocess.Popen[bytes], limit: int
) -> None:
    done = threading.Event()
    tail: deque[str] = deque(maxlen=STDERR_TAIL_LINES)
    prompt = _prompt_bytes(context, turn.text)
    helpers = [
        threading.Thread(target=_feed, args=(process, prompt), daemon=True),
        threading.Thread(target=_drain_stderr, args=(process, turn, tail), daemon=True),
        threading.Thread(target=_watch_interrupt, args=(process, turn, done), daemon=True),
    ]
    for helper in helpers:
        helper.start()
    overflow = _read_output(turn, process, limit)
    status = process.wait()
    done.set()
    helpers[1].join(1.0)  # the last stderr lines belong to this turn
    if turn.interrupted.is_set():
        return  # the SDK reports `interrupted`
    if overflow:
        turn.fail(f"output exceeds {limit} bytes; the program was stopped")
    elif status == 0:
        _note_stderr(context, turn, tail)
        turn.complete(data={"exitStatus": 0})
    elif status < 0:
        turn.fail(_with_stderr(f"the program was killed by signal {-status}", tail))
    else:
        turn.fail(_with_stderr(f"the program exited with status {status}", tail))


def main() -> None:
    run_worker(handle, name="exec", version=VERSION, capabilities=["exec"])


if __name__ == "__main__":
    main()
