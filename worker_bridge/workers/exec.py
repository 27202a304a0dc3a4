"""The exec worker: any command-line program as a Maia worker.

Per prompt it runs the configured argv in the worker's working directory (the Session's),
with the prompt on the program's stdin and a filtered environment. Stdout streams back as
message deltas; stderr lines become diagnostics; exit status 0 completes the turn, anything
else fails it. Output is bounded: past `maxOutputBytes` the program is killed and the turn
fails. An interrupt sends SIGTERM to the program, then SIGKILL after two seconds.

Configuration (initialize options, falling back to the environment):
`argv` / `MAIA_EXEC_ARGV` (a JSON array, required), `maxOutputBytes` /
`MAIA_EXEC_MAX_OUTPUT` (default 1 MiB), `passEnv` / `MAIA_EXEC_PASS_ENV` (comma-separated
variable names passed through besides the basic set).
"""

from __future__ import annotations

import codecs
import json
import os
import signal
import subprocess
import threading

from worker_bridge._sdk import WorkerContext, run_worker
from worker_bridge._turn import Turn

VERSION = "1.0.0"
DEFAULT_MAX_OUTPUT = 1024 * 1024
BASIC_ENV = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR")
KILL_AFTER_S = 2.0


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


def _environment(context: WorkerContext, turn: Turn) -> dict[str, str]:
    extra = [n.strip() for n in _setting(context, "passEnv", "MAIA_EXEC_PASS_ENV").split(",")]
    names = [*BASIC_ENV, *(n for n in extra if n)]
    env = {name: os.environ[name] for name in names if name in os.environ}
    # The attempt marker lets the supervisor's sweep find the program if it escapes.
    env["MAIA_WORKER_ATTEMPT"] = context.attempt_id
    env["MAIA_TURN_ID"] = turn.turn_id
    return env


def _feed(process: subprocess.Popen[bytes], text: str) -> None:
    assert process.stdin is not None
    try:
        process.stdin.write(text.encode("utf-8"))
        process.stdin.close()
    except OSError:  # the program did not read its input: its business
        pass


def _drain_stderr(process: subprocess.Popen[bytes], turn: Turn) -> None:
    assert process.stderr is not None
    for line in process.stderr:
        text = line[:4096].decode("utf-8", errors="replace").rstrip("\n")
        turn.diagnostic({"stream": "stderr", "line": text})


def _watch_interrupt(process: subprocess.Popen[bytes], turn: Turn, done: threading.Event) -> None:
    while not done.is_set():
        if turn.interrupted.wait(0.1):
            _stop(process)
            return


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(KILL_AFTER_S)
    except subprocess.TimeoutExpired:
        process.kill()


def handle(context: WorkerContext, turn: Turn) -> None:
    """Run the program once for this prompt."""
    argv = _argv(context)
    limit = int(_setting(context, "maxOutputBytes", "MAIA_EXEC_MAX_OUTPUT", "0") or 0)
    limit = limit or DEFAULT_MAX_OUTPUT
    try:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=_environment(context, turn),
        )
    except OSError as exc:
        turn.fail(f"could not start {argv[0]}: {exc}")
        return
    context.exit_hooks.append(process.kill)  # the worker exiting takes the program along
    try:
        _supervise(context, turn, process, limit)
    finally:
        context.exit_hooks.remove(process.kill)


def _supervise(
    context: WorkerContext, turn: Turn, process: subprocess.Popen[bytes], limit: int
) -> None:
    done = threading.Event()
    helpers = [
        threading.Thread(target=_feed, args=(process, turn.text), daemon=True),
        threading.Thread(target=_drain_stderr, args=(process, turn), daemon=True),
        threading.Thread(target=_watch_interrupt, args=(process, turn, done), daemon=True),
    ]
    for helper in helpers:
        helper.start()
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    total = 0
    overflow = False
    assert process.stdout is not None
    fd = process.stdout.fileno()
    while chunk := os.read(fd, 4096):
        total += len(chunk)
        if total > limit:
            overflow = True
            _stop(process)
            break
        text = decoder.decode(chunk)
        if text:
            turn.delta(text)
    if tail := decoder.decode(b"", final=True):
        turn.delta(tail)
    status = process.wait()
    done.set()
    helpers[1].join(1.0)  # the last stderr lines belong to this turn
    if turn.interrupted.is_set():
        return  # the SDK reports `interrupted`
    if overflow:
        turn.fail(f"output exceeds {limit} bytes; the program was stopped")
    elif status == 0:
        turn.complete(data={"exitStatus": 0})
    elif status < 0:
        turn.fail(f"the program was killed by signal {-status}")
    else:
        turn.fail(f"the program exited with status {status}")


def main() -> None:
    run_worker(handle, name="exec", version=VERSION, capabilities=["exec"])


if __name__ == "__main__":
    main()
