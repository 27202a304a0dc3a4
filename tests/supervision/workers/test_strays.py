"""Strays of a Node killed outright: a worker's `setsid` grandchild outlives `kill -9` of the
supervising process, and the next supervisor of the same scope sweeps it when it opens (and
any other stray of a dead attempt when it closes), never a process of another scope."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psutil
import trio

from supervision._process_group import _stray_of
from supervision.workers import MemoryEpochSource, WorkerTimings, open_worker_supervisor

SHORT = WorkerTimings(heartbeat_ms=200, interrupt_ms=800, terminate_ms=800, kill_wait_ms=2_000)
# A stand-in for the Node: a supervisor with a scope, one echo worker whose `/grandchild`
# starts `sleep 3600` in a new session; it prints the grandchild's pid and waits to be killed.
NODE = """
import sys, trio
from supervision.workers import MemoryEpochSource, WorkerSpec, open_worker_supervisor

async def main(scope: str, cwd: str) -> None:
    async with open_worker_supervisor(MemoryEpochSource(), scope=scope) as supervisor:
        spec = WorkerSpec.python_module("worker_bridge.workers.echo", cwd=cwd)
        handle = await supervisor.start_worker(spec)
        await handle.wait_initialized()
        events = [event async for event in handle.prompt("t", "/grandchild")]
        print(events[-1].text.split()[1], flush=True)
        await trio.sleep_forever()

trio.run(main, sys.argv[1], sys.argv[2])
"""


def _scope(name: str) -> str:
    """A scope of this test run alone: another run on the same machine (same user) sweeps
    only its own scopes, so two runs never kill each other's strays."""
    return f"test-{os.getpid()}-{name}"


def alive(pid: int) -> bool:
    """Whether /proc shows `pid` as a process that is not a zombie."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "State:\tZ" not in status


def _kill_if_alive(pid: int) -> None:
    if alive(pid):
        os.kill(pid, signal.SIGKILL)


@contextmanager
def orphaned_grandchild(tmp_path: Path, scope: str) -> Iterator[int]:
    """The pid of a worker's setsid grandchild whose supervising process was SIGKILLed."""
    node = subprocess.Popen([sys.executable, "-c", NODE, scope, str(tmp_path)],
                            stdout=subprocess.PIPE, text=True)  # fmt: skip
    grandchild = 0
    try:
        assert node.stdout is not None
        grandchild = int(node.stdout.readline())
        node.send_signal(signal.SIGKILL)
        node.wait(timeout=30)
        yield grandchild
    finally:
        if node.poll() is None:
            node.kill()
            node.wait()
        if node.stdout is not None:
            node.stdout.close()
        if grandchild:
            _kill_if_alive(grandchild)


def _stray(scope: str, attempt: str) -> subprocess.Popen[bytes]:
    env = {"PATH": os.environ["PATH"], "MAIA_WORKER_SCOPE": scope, "MAIA_WORKER_ATTEMPT": attempt}
    return subprocess.Popen(["sleep", "3600"], env=env, start_new_session=True)


async def test_a_setsid_grandchild_of_a_killed_node_is_swept_at_the_next_start(
    tmp_path: Path,
) -> None:
    """kill -9 of the supervising process leaves the grandchild running (reparented, out of
    every tree); a supervisor of another scope or of none leaves it; the next supervisor of
    the same scope kills it as it opens."""
    with trio.fail_after(60), orphaned_grandchild(tmp_path, _scope("home-a")) as grandchild:
        assert alive(grandchild)
        async with open_worker_supervisor(MemoryEpochSource(), SHORT) as unscoped:
            assert unscoped.strays_swept == []
        async with open_worker_supervisor(
            MemoryEpochSource(), SHORT, scope=_scope("home-b")
        ) as other:
            assert grandchild not in other.strays_swept
        assert alive(grandchild)
        async with open_worker_supervisor(
            MemoryEpochSource(), SHORT, scope=_scope("home-a")
        ) as mine:
            assert grandchild in mine.strays_swept
            assert not alive(grandchild)


async def test_a_stray_of_a_dead_attempt_is_swept_when_the_supervisor_closes(
    tmp_path: Path,
) -> None:
    """A process carrying the scope's marker for an attempt no worker runs, appearing while
    the supervisor is open, is swept on its clean close; another scope's is left alone."""
    ours, theirs = (
        _stray(_scope("home-c"), "attempt_gone"),
        _stray(_scope("home-d"), "attempt_gone"),
    )
    try:
        with trio.fail_after(60):
            async with open_worker_supervisor(
                MemoryEpochSource(), SHORT, scope=_scope("home-c")
            ) as sup:
                pass
        assert ours.pid in sup.strays_swept
        assert not alive(ours.pid)
        assert theirs.poll() is None
    finally:
        for process in (ours, theirs):
            process.kill()
            process.wait()


def test_a_process_started_after_the_sweep_began_is_not_a_stray() -> None:
    """The start-time check: a marked process newer than the sweep is never judged a
    leftover (nor one whose attempt is live, nor one of another scope)."""
    stray = _stray(_scope("home-e"), "attempt_gone")
    try:
        process = psutil.Process(stray.pid)
        deadline = time.monotonic() + 30  # the environment is readable once `sleep` runs
        while process.environ().get("MAIA_WORKER_SCOPE") != _scope("home-e"):
            assert time.monotonic() < deadline
            time.sleep(0.01)
        now = time.time()
        assert _stray_of(process, _scope("home-e"), frozenset(), now)
        assert not _stray_of(process, _scope("home-e"), frozenset(), process.create_time() - 1)
        assert not _stray_of(process, _scope("home-e"), frozenset({"attempt_gone"}), now)
        assert not _stray_of(process, _scope("home-f"), frozenset(), now)
    finally:
        stray.kill()
        stray.wait()
