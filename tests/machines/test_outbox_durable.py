"""The Execution Node's outbox survives its restart: two real Node processes on 127.0.0.1
with the fault proxy between them. A turn's last records go out into a partition (none
reaches Control), the Execution Node is stopped (SIGTERM, or kill -9: each record is
committed to its SQLite before it is sent) and started again, the partition healed: it
sends every record Control never acknowledged, in order, and Control stores each once;
the merged traces pass the checker."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
import trio

from ._nodes import checked_traces, wait_for
from .test_evidence_resend import WORDS, _finish_into_partition, _staged_turn, _stored
from .test_placement_e2e import _turn
from .test_proxy_scenarios import BOUND_S, _blocking, _proxied


def _kept(home: Path) -> list[tuple[str, int]]:
    """The (source, sequence) of every record in the Node's durable outbox."""
    conn = sqlite3.connect(f"file:{home / 'maia.db'}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT source_id, sequence FROM machine_outbox").fetchall()
    finally:
        conn.close()
    return [(str(source), int(sequence)) for source, sequence in rows]


@pytest.mark.parametrize("stop", ["sigterm", "kill9"])
async def test_records_unacknowledged_at_a_restart_reach_control_once(
    tmp_path: Path, stop: str
) -> None:
    """Mid-turn every frame dropped while the turn completes on the Execution Node; it is
    stopped and restarted, then the link heals: every word is stored at Control once,
    no record twice, the Node's outbox is empty again and the traces are clean."""
    with trio.fail_after(BOUND_S):
        async with _proxied(tmp_path, seed=41 if stop == "sigterm" else 42) as p:
            session_id, gate, done = await _staged_turn(p, tmp_path)
            before = len(_stored(p))
            await _finish_into_partition(p, gate, done)
            await _blocking(p.execution.stop if stop == "sigterm" else p.execution.kill9)
            assert len(_stored(p)) == before  # none arrived: they were in flight
            kept = _kept(p.execution.home)
            assert len(kept) >= 2, kept  # the last words and the completion, durable
            await _blocking(p.execution.start)
            p.proxy.heal()
            await _blocking(wait_for, lambda: not _kept(p.execution.home),
                            "Control did not acknowledge the kept records", p.execution,
                            120)  # fmt: skip
            stored = _stored(p)
            assert len(stored) == len(set(stored)), stored  # each stored once
            assert set(kept) <= set(stored), (kept, stored)  # every kept record arrived
            turn = _turn(p.control, session_id)
            shown = json.dumps(await _blocking(p.control.call, "turn", "show", turn["turnId"]))
            counts = [shown.count(word) for word in WORDS]
            assert counts[0] >= 1, counts
            assert len(set(counts)) == 1, counts  # each word as often as the first
            assert "unacknowledged evidence records kept from the last run" in p.execution.log()
            verdict = checked_traces(p.control, p.execution)
            assert verdict.checks > 0
            print(f"\n{stop}: stored before {before}, kept across the restart {len(kept)}, stored"
                  f" {len(stored)}, turn {turn.get('state')}; {verdict}")  # fmt: skip
