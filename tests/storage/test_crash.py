"""Crash safety: SIGKILL the writer at random moments; nothing acknowledged is ever lost.

A real child process (forked from a multiprocessing forkserver that preloaded the modules, so
a start costs milliseconds, not an interpreter boot) writes through the storage actor (16
concurrent callers, group commit, synchronous=FULL) and reports each acknowledged mutation
over a pipe. The parent kills it with SIGKILL at a random moment — sometimes while it is still
opening or migrating — then reopens the file and checks: every acknowledged mutation present
(session row, receipt, both events), `PRAGMA integrity_check` ok, every owner's sequence
gap-free (1..n). 100 kills per run; MAIA_CRASH_KILLS=1000 runs more.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.context
import os
import random
import select
import signal
import sqlite3
import time
from pathlib import Path

import pytest

from ._crash_child import run_child

KILLS = int(os.environ.get("MAIA_CRASH_KILLS", "100"))


def _run_and_kill(
    ctx: multiprocessing.context.ForkServerContext, db: Path, seed: int, rng: random.Random
) -> list[list[str]]:
    """Start the child, kill it at a random moment, return the acknowledged lines."""
    reader, writer = ctx.Pipe(duplex=False)
    child = ctx.Process(target=run_child, args=(str(db), str(seed), writer), daemon=True)
    child.start()
    writer.close()
    fd = reader.fileno()
    data = b""
    # One kill in ten lands while the child opens the database, one in ten just after it is
    # ready; the rest at a random moment after the first acknowledged write.
    phase = rng.random()
    trigger = b"ready\n" if phase < 0.2 else b"\nack "
    deadline = time.monotonic() + 30.0
    kill_at = time.monotonic() + rng.uniform(0.0, 0.03) if phase < 0.1 else None
    try:
        while True:
            now = time.monotonic()
            if kill_at is not None and now >= kill_at:
                break
            if now > deadline:
                pytest.fail("the crash child did not reach its kill point within 30 s")
            wait = 0.05 if kill_at is None else max(0.0, kill_at - now)
            readable, _, _ = select.select([fd], [], [], wait)
            if readable:
                chunk = os.read(fd, 65536)
                if not chunk:
                    child.join(5)
                    pytest.fail(f"the crash child exited early with {child.exitcode}")
                data += chunk
                if kill_at is None and trigger in data:
                    kill_at = time.monotonic() + rng.uniform(0.0, 0.12)
    finally:
        assert child.pid is not None
        os.kill(child.pid, signal.SIGKILL)
        child.join(30)
    assert child.exitcode == -signal.SIGKILL
    while chunk := os.read(fd, 65536):
        data += chunk
    reader.close()
    complete = data[: data.rfind(b"\n") + 1].decode().splitlines()
    return [line.split() for line in complete if line.startswith("ack ")]


def _check(db: Path, acked: list[list[str]]) -> None:
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        commands = {r[0] for r in conn.execute("SELECT command_id FROM receipts")}
        sessions = {r[0] for r in conn.execute("SELECT session_id FROM sessions")}
        shared = set(conn.execute("SELECT owner_id, owner_seq FROM events"))
        for _, command, session_id, owner, seq in acked:
            assert command in commands, f"acknowledged {command} lost"
            assert session_id in sessions, f"acknowledged session {session_id} lost"
            assert (owner, int(seq)) in shared, f"acknowledged event {owner}#{seq} lost"
        by_owner: dict[str, list[int]] = {}
        for owner, seq in conn.execute("SELECT owner_id, owner_seq FROM events ORDER BY position"):
            by_owner.setdefault(owner, []).append(seq)
        for owner, seqs in by_owner.items():
            assert seqs == list(range(1, len(seqs) + 1)), f"{owner} has a gap: {seqs[:20]}"
        receipts = conn.execute("SELECT count(*) FROM receipts").fetchone()[0]
        assert receipts == len(sessions)
    finally:
        conn.close()


@pytest.mark.slow
def test_sigkill_never_loses_an_acknowledged_write(tmp_path: Path) -> None:
    """After each of KILLS random SIGKILLs, every acked write is there, intact and gap-free."""
    db = tmp_path / "crash.db"
    rng = random.Random(int(os.environ.get("MAIA_CRASH_SEED", "20261130")))
    acked: list[list[str]] = []
    kills_after_acks = 0
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["tests.storage._crash_child"])
    for round_number in range(KILLS):
        new = _run_and_kill(ctx, db, round_number, rng)
        kills_after_acks += bool(new)
        acked.extend(new)
        _check(db, acked)
    # The test only means something if kills landed amid acknowledged writes.
    assert kills_after_acks >= KILLS // 2
    assert len(acked) >= KILLS
