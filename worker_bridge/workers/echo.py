"""The echo worker: answers each prompt with its own text, streamed as deltas then completed.

Test directives at the start of a prompt (see docs/workers.md):
`/sleep MS rest`, `/crash`, `/silent`, `/ignore-term`, `/grandchild`, `/flood N`, `/spew N`,
`/tool NAME rest`, `/diagnostics N`, `/diagnostics-burst N`, `/items N SIZE`, `/oversize`,
`/garbage`, `/stale-epoch`.
If `MAIA_ECHO_LOG` (environment) or the `echoLog` initialize option names a file, one line
`turnId attemptId pid` is appended per prompt started, so tests can prove a prompt never
ran twice.
"""

from __future__ import annotations

import os

from worker_bridge._limits import MAX_FRAME_BYTES
from worker_bridge._sdk import WorkerContext, run_worker
from worker_bridge._turn import Turn

VERSION = "1.0.0"
CHUNK = 64  # characters per delta


def _log(context: WorkerContext, turn: Turn) -> None:
    path = context.options.get("echoLog") or os.environ.get("MAIA_ECHO_LOG")
    if not path:
        return
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, f"{turn.turn_id} {context.attempt_id} {os.getpid()}\n".encode())
    finally:
        os.close(fd)


def _echo(turn: Turn, text: str) -> None:
    for start in range(0, len(text), CHUNK):
        if turn.interrupted.is_set():
            return
        turn.delta(text[start : start + CHUNK])
    turn.complete(text)


def handle(context: WorkerContext, turn: Turn) -> None:
    """Echo the prompt, after obeying a leading directive."""
    _log(context, turn)
    word, _, rest = turn.text.partition(" ")
    if word == "/sleep":
        ms, _, rest = rest.partition(" ")
        if not turn.sleep(int(ms) / 1000):
            return  # interrupted: the SDK reports it
        _echo(turn, rest)
    elif word == "/crash":
        turn.delta("crashing")
        os._exit(3)
    elif word == "/silent":
        context.go_silent()
        turn.sleep(10**6)
    elif word == "/ignore-term":
        context.ignore_stop_requests()
        _echo(turn, rest or "ignoring stop requests")
    elif word == "/grandchild":
        import subprocess

        child = subprocess.Popen(["sleep", "3600"], start_new_session=True)
        turn.complete(f"grandchild {child.pid}")
    elif word == "/flood":
        for index in range(int(rest or "1000")):
            turn.delta(str(index))
        turn.complete("flooded")
    elif word == "/spew":  # N characters of output in 4,096-character deltas, then done
        size, line = int(rest or "1000"), ("0123456789" * 410)[:4095] + "\n"
        for _ in range(size // 4096):
            if turn.interrupted.is_set():
                return
            turn.delta(line)
        turn.delta("x" * (size % 4096))
        turn.complete()
    elif word == "/items":  # N completed reasoning items of SIZE characters each, then done
        count, _, width = rest.partition(" ")
        for index in range(int(count or "10")):
            body = f"{index}:" + "y" * max(int(width or "100") - len(f"{index}:"), 0)
            turn.event("item.completed", data={"item": {"type": "reasoning", "text": body}})
        turn.complete("itemized")
    elif word == "/tool":
        name, _, rest = rest.partition(" ")
        ok, content = turn.call_tool(name, {"text": rest})
        if ok:
            turn.complete(content)
        else:
            turn.fail(f"tool {name} failed: {content}")
    elif word == "/diagnostics":
        for index in range(int(rest or "10")):
            turn.diagnostic({"index": index})
        turn.complete("diagnosed")
    elif word == "/diagnostics-burst":  # N records at once: past 2,048 the queue drops
        dropped = turn.diagnostics([{"index": index} for index in range(int(rest or "10"))])
        turn.complete(f"dropped {dropped}")
    elif word == "/oversize":
        context.write_raw(b'{"type":"event","text":"' + b"x" * (MAX_FRAME_BYTES + 10) + b'"}\n')
        turn.sleep(10**6)
    elif word == "/garbage":
        context.write_raw(b"\x00\xff this is not JSON \xfe\n")
        turn.sleep(10**6)
    elif word == "/stale-epoch":
        context.send_heartbeat(epoch=context.epoch - 1)
        turn.sleep(10**6)
    else:
        _echo(turn, turn.text)


def main() -> None:
    run_worker(handle, name="echo", version=VERSION, capabilities=["echo"])


if __name__ == "__main__":
    main()
