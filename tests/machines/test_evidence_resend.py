"""Evidence in flight when the link drops is sent again: two real Node processes on
127.0.0.1 with the fault proxy between them. A turn's records sent into a partition (or
stored at Control while their acknowledgements are lost) reach Control once after the
link is cut and reopened; the turn completes, not lost, and the merged traces pass the
checker's "every acknowledged record stored once"."""

from __future__ import annotations

import json
import os
import re
import signal
from pathlib import Path
from typing import Any

import trio

from ._nodes import checked_traces, trace_events, wait_for
from .test_placement_e2e import _attempts, _turn
from .test_proxy_scenarios import BOUND_S, Proxied, _blocking, _fates, _proxied

WORDS = ("alpha-1", "bravo-2", "charlie-3", "delta-4")
_RESENT = re.compile(r"(\d+) evidence records sent again")


def _staged(p: Proxied, gate: Path, done: Path) -> str:
    """A Session whose turns print the first word, wait (bounded) for `gate`, print the
    rest and touch `done`."""
    rest = "; ".join(f"echo {word}" for word in WORDS[1:])
    script = (f"echo {WORDS[0]}; i=0; while [ ! -e {gate} ] && [ $i -lt 1200 ]; do sleep 0.1;"
              f" i=$((i+1)); done; {rest}; touch {done}")  # fmt: skip
    config = {"executors": {"staged": {"kind": "exec", "argv": ["/bin/sh", "-c", script]}}}
    (p.control.home / "config.jsonc").write_text(json.dumps(config))
    p.control.maia("config", "admit", "--yes")
    created = p.control.call("session", "create", "--project-id", p.project_id, "--machine",
                             "box", "--executor", "user:staged")  # fmt: skip
    session_id: str = created["session"]["sessionId"]
    return session_id


def _stored(p: Proxied) -> list[tuple[str, int]]:
    return [(e["source"], e["sequence"]) for e in trace_events(p.control, "record_stored")]


async def _staged_turn(p: Proxied, tmp_path: Path) -> tuple[str, Path, Path]:
    """The staged turn started and its first word stored at Control."""
    gate, done = tmp_path / "gate", tmp_path / "done"
    session_id = await _blocking(_staged, p, gate, done)
    await _blocking(p.control.maia, "turn", "send", session_id, "go")
    await _blocking(wait_for, lambda: len(_stored(p)) >= 3, "the first word was not stored",
                    p.control)  # fmt: skip
    return session_id, gate, done


async def _finish_into_partition(p: Proxied, gate: Path, done: Path) -> None:
    """Partition the link both ways, let the staged turn finish on the Execution Node, and
    wait until its remaining words and its completion went out into the partition."""
    p.proxy.partition()
    dropped = _fates(p.proxy, "partitioned")
    await trio.Path(gate).touch()
    await _blocking(wait_for, done.exists, "the turn did not finish", p.execution)
    await _blocking(wait_for, lambda: _fates(p.proxy, "partitioned") >= dropped + 3,
                    "the turn's records were not sent", p.execution)  # fmt: skip


async def _completes_once(p: Proxied, session_id: str) -> dict[str, Any]:
    """The turn completes at Control, each word as often as the first (none stored twice),
    every record stored once, and the traces judged clean."""
    await _blocking(wait_for, lambda: _turn(p.control, session_id).get("state") == "completed",
                    "the turn did not complete after the link reopened", p.control,
                    120)  # fmt: skip
    turn = _turn(p.control, session_id)
    shown = json.dumps(await _blocking(p.control.call, "turn", "show", turn["turnId"]))
    counts = [shown.count(word) for word in WORDS]
    assert counts[0] >= 1, counts
    assert len(set(counts)) == 1, counts
    assert "runtime_lost" not in shown
    stored = _stored(p)
    assert len(stored) == len(set(stored)), stored
    verdict = checked_traces(p.control, p.execution)
    assert verdict.checks > 0
    return {"counts": counts, "stored": len(stored), "trace": str(verdict)}


async def _cut_and_reopen(p: Proxied) -> int:
    """Cut the connection, clear the faults; the records sent again once it reopened."""
    p.proxy.sever()
    p.proxy.heal()
    await _blocking(wait_for, lambda: _RESENT.search(p.execution.log()) is not None,
                    "nothing was sent again after the link reopened", p.execution)  # fmt: skip
    found = _RESENT.search(p.execution.log())
    assert found is not None
    return int(found[1])


async def test_records_sent_into_a_partition_arrive_once_after_the_link_reopens(
    tmp_path: Path,
) -> None:
    """Mid-turn, every frame both ways dropped while the turn prints its last words and
    completes; the link is cut and reopened: the Node sends the unacknowledged records
    again, Control stores each once, and the turn completes (not lost)."""
    with trio.fail_after(BOUND_S):
        async with _proxied(tmp_path, seed=21) as p:
            session_id, gate, done = await _staged_turn(p, tmp_path)
            before = len(_stored(p))
            await _finish_into_partition(p, gate, done)
            assert len(_stored(p)) == before  # none arrived: they were in flight
            assert _turn(p.control, session_id)["state"] == "running"
            resent = await _cut_and_reopen(p)
            figures = await _completes_once(p, session_id)
            assert resent >= 2  # the last words (one or more deltas) and the completion
            print(f"\nrecords stored before the drop {before}, sent again {resent}, frames"
                  f" dropped {_fates(p.proxy, 'partitioned')}; {figures}")  # fmt: skip


async def test_records_stored_whose_acks_were_lost_are_acknowledged_again(
    tmp_path: Path,
) -> None:
    """Mid-turn, every frame toward the Node dropped (Control stores the last words, its
    acknowledgements are lost); the link is cut and reopened: the Node sends them again,
    Control stores none twice and acknowledges them again: a second cut sends nothing."""
    with trio.fail_after(BOUND_S):
        async with _proxied(tmp_path, seed=22) as p:
            session_id, gate, _ = await _staged_turn(p, tmp_path)
            p.proxy.partition(one_way="to_node")
            gate.touch()
            await _blocking(wait_for, lambda: _turn(p.control, session_id).get("state")
                            == "completed", "the turn did not complete", p.control)  # fmt: skip
            stored = len(_stored(p))
            resent = await _cut_and_reopen(p)
            assert resent >= 2  # the last words (one or more deltas) and the completion
            figures = await _completes_once(p, session_id)
            assert len(_stored(p)) == stored  # the copies were not stored again
            # Acknowledged again: a second cut finds nothing held, so nothing goes again.
            reports = len(trace_events(p.control, "report_received"))
            p.proxy.sever()
            await _blocking(wait_for, lambda: len(trace_events(p.control, "report_received"))
                            >= reports + 2, "the link did not reopen", p.control)  # fmt: skip
            assert len(_RESENT.findall(p.execution.log())) == 1, p.execution.log()[-2000:]
            print(f"\nrecords stored {stored}, sent again {resent}; {figures}")


async def test_a_worker_exit_during_the_drop_waits_behind_its_turns_records(
    tmp_path: Path,
) -> None:
    """Mid-turn, every frame dropped; the turn completes and its worker is then killed;
    the link is cut and reopened: the reconnect's hello still lists the attempt (its exit
    not yet heard), the turn's records arrive first and it completes, not `runtime_lost`;
    the exit, sent again after them, ends the attempt (the next turn gets a new worker)."""
    with trio.fail_after(BOUND_S):
        async with _proxied(tmp_path, seed=23) as p:
            session_id, gate, done = await _staged_turn(p, tmp_path)
            [(_, pid)] = await _blocking(_attempts, p.control, session_id)
            await _finish_into_partition(p, gate, done)
            os.kill(pid, signal.SIGKILL)
            await _blocking(wait_for, lambda: not Path(f"/proc/{pid}").exists(),
                            "the worker was not reaped", p.execution)  # fmt: skip
            resent = await _cut_and_reopen(p)
            figures = await _completes_once(p, session_id)
            # Its exit, sent again after the records, reached Control: the next turn
            # starts a fresh worker.
            again = await _blocking(p.control.maia, "turn", "send", session_id, "again",
                                    "--wait", "--timeout", "120s")  # fmt: skip
            assert WORDS[-1] in again.stdout
            assert len(await _blocking(_attempts, p.control, session_id)) == 2
            print(f"\nworker {pid} killed in the drop; sent again {resent}; {figures}")
