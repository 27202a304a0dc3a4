"""A worker's `initialized` lost in a dying link is sent again on the next connection:
two real Node processes on 127.0.0.1 with the fault proxy between them, every frame toward
Control dropped while the worker starts, then the link cut and reopened (without the
re-send Control's wait ends after 60 s and the launch fails). And, as logic, what the
outbox sends again and when it forgets the frame."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

import trio

from maia.machines import EvidenceOutbox

from ._nodes import checked_traces, wait_for
from .test_outbox import Wire
from .test_placement_e2e import _attempts, _turn
from .test_proxy_scenarios import BOUND_S, _blocking, _proxied, _session


def _parent(pid: int) -> int | None:
    """`pid`'s parent, or None once it has ended."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def _children(pid: int) -> set[int]:
    return {int(e) for e in os.listdir("/proc") if e.isdigit() and _parent(int(e)) == pid}


def _runs_a_worker(pid: int) -> bool:
    """Whether `pid` has exec'd a worker: /proc shows its own environment, with its attempt
    marker, no longer the Node's that it was forked with."""
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False  # it ended meanwhile
    return any(entry.startswith(b"MAIA_WORKER_ATTEMPT=") for entry in environ)


def _stop_new_child(pid: int, before: set[int]) -> int:
    """SIGSTOP the Execution Node's next worker as soon as it has exec'd (bounded: 60 s).
    Not before: a child stopped between fork and exec holds the Node's spawn itself, which
    a loaded host's longer fork-to-exec span made likely. Once the new child is seen, only
    its own environment is polled (no /proc scan between looks), and it runs at the lowest
    priority, so its interpreter's start-up (what stands between exec and `initialized`)
    outlasts the poll even on a loaded host."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        for child in sorted(_children(pid) - before):
            with contextlib.suppress(OSError):  # it ended meanwhile
                os.setpriority(os.PRIO_PROCESS, child, 19)
            while time.monotonic() < deadline and _parent(child) == pid:
                if _runs_a_worker(child):
                    os.kill(child, signal.SIGSTOP)
                    return child
                time.sleep(0.0005)
        time.sleep(0.005)
    raise AssertionError("the Execution Node started no worker")


async def test_a_lost_initialized_is_sent_again_and_the_turn_completes(
    tmp_path: Path,
) -> None:
    """The worker held (SIGSTOP) until Control heard it spawn, then every frame toward
    Control dropped while it initializes; cut and reopened: Control hears the re-sent
    `initialized`, the turn completes in the one worker, the traces hold no violation."""
    with trio.fail_after(BOUND_S):
        async with _proxied(tmp_path, seed=31) as p:
            session_id = await _session(p)
            before = await _blocking(_children, p.execution.pid)
            await _blocking(p.control.maia, "turn", "send", session_id, "after the loss")
            worker = await _blocking(_stop_new_child, p.execution.pid, before)
            await _blocking(wait_for, lambda: any(pid == worker for _, pid in _attempts(
                p.control, session_id)), "Control did not hear the spawn", p.control)  # fmt: skip
            p.proxy.partition(one_way="to_control")
            logged = len(p.execution.log())
            os.kill(worker, signal.SIGCONT)
            await _blocking(wait_for, lambda: " initialized" in p.execution.log()[logged:],
                            "the worker did not initialize", p.execution)  # fmt: skip
            assert _turn(p.control, session_id).get("state") != "completed"
            p.proxy.sever()
            p.proxy.heal()
            await _blocking(wait_for, lambda: _turn(p.control, session_id).get("state")
                            in ("completed", "failed"), "the turn did not end", p.control,
                            120)  # fmt: skip
            turn = _turn(p.control, session_id)
            assert turn["state"] == "completed", turn
            assert len(await _blocking(_attempts, p.control, session_id)) == 1
            verdict = checked_traces(p.control, p.execution)
            assert verdict.checks > 0
            print(f"\ntrace: {verdict}")


async def test_an_initialized_goes_again_after_each_rewind_until_a_record_of_its_turn() -> None:
    """An `initialized` sent is sent again after a rewind; once a record of its attempt is
    kept (Control prompted it, so it heard the frame) a rewind no longer sends it."""
    wire = Wire()
    outbox = EvidenceOutbox(wire.send)
    await outbox.send_after_records("attempt_a", "init-a", initialized=True)
    outbox.rewind()
    await outbox.flush()
    assert wire.sent == ["init-a", "init-a"]
    outbox.keep("s", 1, "r1", attempt_id="attempt_a")
    await outbox.flush()
    outbox.rewind()
    await outbox.flush()
    assert wire.sent == ["init-a", "init-a", "r1", "r1"]


async def test_an_exit_replaces_the_initialized_that_a_rewind_sends() -> None:
    """After its attempt's exit, a rewind sends the exit again, not the `initialized`."""
    wire = Wire()
    outbox = EvidenceOutbox(wire.send)
    await outbox.send_after_records("attempt_a", "init-a", initialized=True)
    await outbox.send_after_records("attempt_a", "exit-a", exit_frame=True)
    outbox.rewind()
    await outbox.flush()
    assert wire.sent == ["init-a", "exit-a", "exit-a"]
