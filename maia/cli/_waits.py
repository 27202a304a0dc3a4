"""The CLI's waiting conveniences: `turn send --wait`, `session wait`, `turn wait`,
`events read --follow`, and the default Project of `session create` (the current
directory's).

`turn send --wait` is `turn.send` with its bounded wait on the one connection (a short turn:
the hello and that request), `turn.wait` after it for a longer turn; on a terminal, or with
`--jsonl`, it also follows the turn live on the observation stream (`_stream.py`).
`session wait` and `turn wait` repeat the Node's bounded wait (at most 4 s a call, answered
as soon as the state is reached): none polls.
`events read --follow` pages the journal with `events.read` (so `--after CURSOR` keeps the
journal's meaning) and, once caught up, reads again when the observation stream carries new
records; Ctrl-C, like `--timeout`, prints the cursor to continue from.
Every wait has a deadline: `--timeout`, or the defaults below.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
from typing import Any, Final

import anyio
from anyio.streams.memory import MemoryObjectSendStream

from maia.core import WAIT_MILLISECONDS_MAX, MaiaError

from . import _exit
from ._invocation import Invocation

DEFAULT_TURN_WAIT_S: Final = 600.0
DEFAULT_SESSION_WAIT_S: Final = 60.0
DEFAULT_TURN_WAIT_S_ALONE: Final = 60.0  # `turn wait TURN` without --timeout
TURN_ENDED: Final = ("completed", "failed", "interrupted")
SESSION_ENDED: Final = ("stopped", "failed")  # terminal: a Session in one never leaves it
FOLLOW_PAUSE_S: Final = (0.1, 0.25, 0.5, 1.0)
PROJECT_PAGES_MAX: Final = 50
MIN_CALL_MS: Final = 200  # the Node rereads every 200 ms: a shorter repeated wait only polls


async def current_project(client: Any, out: Any) -> str:
    """The Project whose root is the current directory, added (and said so) if there is none.

    Raises MaiaError from the Node (project.add refuses a root it cannot use).
    """
    from maia.core import new_id

    found = await found_project(client)
    if found is not None:
        return found
    here = os.path.realpath(os.getcwd())  # noqa: ASYNC240 - one local call, no I/O wait
    added = await client.request("project.add", {"commandId": new_id("command"), "rootPath": here})
    project = added["project"]
    out.message(
        f"added Project {project['projectKey']} ({here}); pass --project-id to choose another"
    )
    return str(project["projectId"])


async def found_project(client: Any) -> str | None:
    """The ID of the Project whose root is the current directory, or None (nothing added)."""
    here = os.path.realpath(os.getcwd())  # noqa: ASYNC240 - one local call, no I/O wait
    cursor = None
    for _ in range(PROJECT_PAGES_MAX):
        page = await client.request(
            "project.list", {"limit": 100, **({"cursor": cursor} if cursor else {})}
        )
        for project in page["projects"]:
            if project["rootPath"] == here:
                return str(project["projectId"])
        cursor = page.get("nextCursor")
        if not cursor:
            break
    return None


def streams_live(out: Any) -> bool:
    """Whether `turn send --wait` follows the turn live: --jsonl (the stream's records are
    its output) or human text on a terminal (a person watches it arrive). Otherwise (--json,
    human text into a pipe or file) the one request on the one connection does it."""
    if out.fmt == "jsonl":
        return True
    if out.fmt != "human":
        return False
    isatty = getattr(out.stdout, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False


async def send_and_wait(
    client: Any, params: dict[str, Any], invocation: Invocation, out: Any
) -> int:
    """`turn send --wait`: send and exit with the turn's outcome: 0 completed, 5 failed or
    interrupted, 3 when `--timeout` (default 10 min) passes first. Without a live stream
    (`streams_live`) it is `turn.send` with its bounded wait, then `turn.wait` only if the
    turn runs longer (`maia.client.send_and_wait_wire`), all on the client's connection."""
    from ._execute import progress

    limit = invocation.timeout_s if invocation.timeout_s is not None else DEFAULT_TURN_WAIT_S
    streamed = ""
    async with progress(out, "the turn"):
        if streams_live(out):
            from ._stream import send_and_stream

            final, streamed = await send_and_stream(client, params, out, limit)
        else:
            from maia.client import send_and_wait_wire

            final = await send_and_wait_wire(client, params, timeout_s=limit)
    turn = final["turn"]
    if turn["state"] not in TURN_ENDED:
        if out.fmt == "json":  # the last answer, as `turn wait` prints it on a timeout
            out.json({"ok": True, "result": final})
        elif out.fmt == "jsonl":
            out.data(json.dumps(turn, ensure_ascii=False, sort_keys=True) + "\n")
        out.message(
            f"turn {turn['turnId']} did not end within {limit:g} s (it goes on: "
            f"maia turn show {turn['turnId']})"
        )
        return _exit.TIMEOUT
    output = turn.get("outputText") or ""
    if out.fmt == "json":
        out.json({"ok": True, "result": final})
    elif out.fmt == "jsonl":
        out.data(json.dumps(turn, ensure_ascii=False, sort_keys=True) + "\n")
    else:
        rest = output[len(streamed) :] if output.startswith(streamed) else output
        if rest:
            out.data(rest)
        if streamed or rest:
            out.data("\n" if not (streamed + rest).endswith("\n") else "")
    if turn["state"] == "completed":
        return _exit.OK
    reason = turn.get("failureReason") or turn["state"]
    detail = f": {turn['failureMessage']}" if turn.get("failureMessage") else ""
    out.message(f"turn {turn['turnId']} {turn['state']} ({reason}){detail}")
    return _exit.WAITED_FAILED


async def session_wait(
    client: Any, params: dict[str, Any], invocation: Invocation, out: Any
) -> int:
    """Repeat `session.wait` until satisfied (exit 0), the Session is in a terminal state it
    was not asked for (5: `stopped` or `failed` never change, so the wait cannot be met), or
    the deadline (`--timeout`, default 60 s) passes (3). The first call does not wait (the
    Node would hold an unmet wait its whole 4 s even on a terminal Session): a stopped
    Session answers at once, as `turn wait` does on an ended turn."""
    from ._execute import progress

    limit = invocation.timeout_s if invocation.timeout_s is not None else DEFAULT_SESSION_WAIT_S
    answer: dict[str, Any] | None = None
    deadline = anyio.current_time() + limit
    first = True
    async with progress(out, f"session {params['sessionId']}"):
        while True:
            left_ms = int((deadline - anyio.current_time()) * 1000)
            call_ms = _call_ms(params, left_ms)
            answer = await client.request(
                "session.wait", {**params, "waitMilliseconds": 0 if first else call_ms}
            )
            first = False
            if answer["satisfied"] or answer["session"]["state"] in SESSION_ENDED:
                break
            if left_ms <= 0:
                break
    out.result("session.wait", answer)
    if answer["satisfied"]:
        return _exit.OK
    session = answer["session"]
    if session["state"] in SESSION_ENDED:
        out.message(
            f"session {params['sessionId']} is {session['state']}: it cannot reach the "
            f"{_wanted(params)} waited for ({session['state']} is final; create another Session)"
        )
        return _exit.WAITED_FAILED
    out.message(f"session {params['sessionId']} did not get there within {limit:g} s")
    return _exit.TIMEOUT


def _call_ms(params: dict[str, Any], left_ms: int) -> int:
    """How long one repeated call waits: the asked `--wait-milliseconds` (default 4 s),
    never past the deadline and, once repeated, never under `MIN_CALL_MS` (with
    `--wait-milliseconds 0` the loop asked the Node ~1,500 times a second)."""
    asked = max(int(params.get("waitMilliseconds", WAIT_MILLISECONDS_MAX)), MIN_CALL_MS)
    return max(0, min(asked, left_ms))


def _wanted(params: dict[str, Any]) -> str:
    """The states and activities a `session wait` asked for, as a person reads them."""
    wanted = [f"state {s}" for s in params.get("states") or ()]
    wanted += [f"activity {a}" for a in params.get("activities") or ()]
    return " or ".join(wanted) or "state"


async def turn_wait(client: Any, params: dict[str, Any], invocation: Invocation, out: Any) -> int:
    """Repeat `turn.wait` until satisfied or the turn completed (exit 0, even when --state
    named another state: completing is no failure), the turn failed or was interrupted
    when that was not asked for (5) or the deadline (`--timeout`, default 60 s) passes (3).
    The first call does not wait, as in `session wait`: the Node holds an unmet wait its
    whole 4 s even on an ended turn, which no state follows."""
    from ._execute import progress

    limit = invocation.timeout_s if invocation.timeout_s is not None else DEFAULT_TURN_WAIT_S_ALONE
    wanted = set(params.get("states") or ())
    answer: dict[str, Any] = {}
    deadline = anyio.current_time() + limit
    first = True
    async with progress(out, f"turn {params['turnId']}"):
        while True:
            left_ms = int((deadline - anyio.current_time()) * 1000)
            call_ms = _call_ms(params, left_ms)
            answer = await client.request(
                "turn.wait", {**params, "waitMilliseconds": 0 if first else call_ms}
            )
            first = False
            if answer["satisfied"] or answer["turn"]["state"] in TURN_ENDED or left_ms <= 0:
                break
    out.result("turn.wait", answer)
    turn = answer["turn"]
    state = turn["state"]
    if answer["satisfied"] and (state in wanted or state not in TURN_ENDED):
        return _exit.OK
    if state == "completed":  # a success, whatever --state asked (docs/cli.md's exit codes)
        if wanted and state not in wanted:
            out.message(f"turn {turn['turnId']} completed (before any state waited for)")
        return _exit.OK
    if state in TURN_ENDED:
        reason = turn.get("failureReason") or state
        out.message(f"turn {turn['turnId']} {state} ({reason})")
        return _exit.WAITED_FAILED
    out.message(f"turn {turn['turnId']} did not get there within {limit:g} s (it is {state})")
    return _exit.TIMEOUT


def _event_line(event: dict[str, Any], now_ms: int) -> str:
    from ._render import relative

    return (
        f"{event['journalPosition']:>8}  {relative(event['occurredAt'], now_ms):>9}  "
        f"{event['eventType']:<24}  {event['ownerType']} {event['ownerId']}\n"
    )


async def _watch(client: Any, nudge: MemoryObjectSendStream[None]) -> None:
    """Nudge the reader whenever the observation stream carries records; if the stream
    cannot be had (an older Node), nudge on a short growing pause instead."""
    try:
        from maia.client import observe_events

        async with observe_events(client, {}, max_retries=2) as feed:
            async for frame in feed:
                if frame.records:
                    with contextlib.suppress(anyio.WouldBlock):
                        nudge.send_nowait(None)
    except (MaiaError, TypeError, OSError):
        pass
    for pause in itertools.count():
        await anyio.sleep(FOLLOW_PAUSE_S[min(pause, len(FOLLOW_PAUSE_S) - 1)])
        with contextlib.suppress(anyio.WouldBlock):
            nudge.send_nowait(None)


async def follow_events(
    client: Any,
    params: dict[str, Any],
    invocation: Invocation,
    out: Any,
    owns_sigint: bool = False,
) -> int:
    """Print journal events as they come, from `params['position']`, until Ctrl-C (exit
    130) or `--timeout` passes (exit 0); either way the cursor to continue from goes to
    stderr. Pages come from `events.read` (so `--after` and the printed cursor keep the
    journal's meaning); after catching up it reads again only when the observation stream
    says something happened. A cursor the Node can no longer serve (pruned, expired, an
    earlier run) is said on stderr and the follow goes on from the oldest retained event; an
    invalid cursor ends it with `invalid_cursor`. With
    `owns_sigint` (the CLI) SIGINT is caught here; otherwise (the console, which keeps
    SIGINT and cancels the command) the cancel prints the cursor on its way out.
    """
    limit = invocation.timeout_s if invocation.timeout_s is not None else float("inf")
    position = params["position"]
    nudge, woken = anyio.create_memory_object_stream[None](1)
    interrupted = anyio.Event()
    failure: Exception | None = None
    served = False  # whether `position` is a cursor the Node gave (one to continue from)
    try:
        with anyio.move_on_after(limit) as scope:
            async with anyio.create_task_group() as group, woken, nudge:
                group.start_soon(_watch, client, nudge)
                if owns_sigint:
                    group.start_soon(_on_interrupt, scope, interrupted)
                try:
                    while True:
                        page = await client.request("events.read", {**params, "position": position})
                        if page["status"] == "cursor_reset_required":  # say so, go on from
                            from ._render import unserved_cursor_text  # the oldest kept

                            out.message(unserved_cursor_text(page).rstrip())
                            position = {"kind": "cursor", "cursor": page["snapshot"]["cursor"]}
                            served = True
                            continue
                        if page["status"] != "page":
                            raise MaiaError(page["status"], page.get("reason", ""), {})
                        for event in page["events"]:
                            out.data(_event_text(event, out))
                        position = {"kind": "cursor", "cursor": page["nextCursor"]}
                        served = True
                        if not page["hasMore"]:
                            await woken.receive()
                except Exception as error:  # re-raised below, not wrapped by the task group
                    failure = error
                finally:
                    group.cancel_scope.cancel()
    except BaseException:  # cancelled from outside (the console's Ctrl-C): say where to go
        _say_cursor(position, out)  # on from, then let the cancel run its course
        raise
    if failure is not None:
        if served:  # the connection went, say: where this follow got to (not a refused cursor)
            _say_cursor(position, out)
        raise failure
    _say_cursor(position, out)
    if interrupted.is_set():
        out.message("interrupted")
        return _exit.INTERRUPTED
    return _exit.OK


async def _on_interrupt(scope: anyio.CancelScope, interrupted: anyio.Event) -> None:
    """Turn SIGINT into a cancel at the follower's next await, so it lands between pages
    (after a page is printed and its cursor kept), never half-way through printing one.
    Where no handler can be installed (not the main thread), Ctrl-C keeps its default.
    Only for a caller that owns SIGINT: under asyncio a second handler would replace the
    console's own, and removing it would leave the console without one."""
    try:
        with anyio.open_signal_receiver(signal.SIGINT) as signals:
            async for _ in signals:
                interrupted.set()
                scope.cancel()
                return
    except (NotImplementedError, ValueError, RuntimeError):
        return


def _event_text(event: dict[str, Any], out: Any) -> str:
    if out.fmt == "human":
        return _event_line(event, out.now_ms)
    return json.dumps(event, ensure_ascii=False, sort_keys=True) + "\n"


def _say_cursor(position: dict[str, Any], out: Any) -> None:
    """The cursor to continue from, on stderr (so a `--jsonl` stdout stays pure records)."""
    if position.get("kind") == "cursor":
        out.message(f"stopped; continue with --after {position['cursor']}")
