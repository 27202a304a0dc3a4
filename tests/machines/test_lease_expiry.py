"""Expiry reconciliation at Control (spec MN0 item 10, as MN2 defines it here): a machine that
never reports again holds its placed Sessions only until its assignment's lease horizon plus
the Node's bounded stop and a round trip (`EXPIRY_GRACE_MS`, the assignment actor's
durable `expiry` timer). By then the Execution Node's own deadline (before Control's
horizon) and its bounded stop have passed: no worker of the assignment runs there. Control
then ends what it still holds live there (`MachineRelay.expire`): a running turn fails
`runtime_lost` (as when the Node's hello reports its attempt gone), an attempt an earlier
Control run left live is closed, and the Session may place a new worker, under item 9 as
ever (a link and a confirmed grant; without them the queued turn is `held`). Before, the
turn stayed `running` and the Session held for good (docs/machines.md said so).

The relay on real storage and a `FakeClock`, then two real Node processes (the Execution
Node killed with `kill -9` and never started again; a partition through the fault proxy
long enough for expiry, then healed: no overlapping execution)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import trio
import trio.testing

from actors.machine import (
    EXPIRY_GRACE_MS,
    LinkBoard,
    MachineRelay,
    RecoveredAttempt,
    StopWorkerFrame,
    WorkerFrame,
)
from maia.core import FakeClock
from storage import Storage

from ..review8c._db import alive
from ._nodes import checked_traces, enrolled_pair, link_of, wait_for
from .test_link_blip import ASSIGNMENT, ATTEMPT, MACHINE, SESSION, _end
from .test_link_blip import store as store  # the seeded storage fixture
from .test_placement_e2e import _attempts, _epoch
from .test_proxy_scenarios import BOUND_S, _blocking, _proxied
from .test_recovered_stop_lost import START, _config, _starts

SLOW = json.dumps({"executors": {"slow": {"kind": "exec", "argv": [
    "/bin/sh", "-c", "read line; echo started; sleep 600; echo late"]}}})  # fmt: skip


async def test_expiry_ends_the_turn_and_closes_the_recovered_attempt(store: Storage) -> None:
    clock = FakeClock()
    relay = MachineRelay(store, clock, LinkBoard())
    await relay.recovered.load()
    assert set(relay.recovered.attempts) == {ATTEMPT}
    other = RecoveredAttempt("attempt_x", "session_x", "assignment_other", MACHINE)
    relay.recovered.attempts[other.attempt_id] = other
    handle = relay.attach_handle(MACHINE, ASSIGNMENT, "attempt_live", 2)
    await relay.on_frame(MACHINE, WorkerFrame("worker", "attempt_live", "spawned", pid=7))
    await relay.on_frame(MACHINE, WorkerFrame("worker", "attempt_live", "initialized"))
    seen: list[Any] = []

    async def pump() -> None:
        async for event in handle.prompt("turn_a", "hi"):
            seen.append((event.kind, event.text))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(pump)
        await trio.testing.wait_all_tasks_blocked()
        await relay.expire(MACHINE, ASSIGNMENT)
        await trio.testing.wait_all_tasks_blocked()
    assert seen == [("lost", "runtime_lost")]  # the Session fails the turn runtime_lost
    assert (await handle.wait_stopped()).fence_reason == "runtime_lost"
    assert relay.handles == {}
    ended, reason = await _end(store)
    assert ended is not None
    assert "lease expired" in str(reason)
    assert "attempt_live" not in relay.blockers(ASSIGNMENT, SESSION)
    assert set(relay.recovered.attempts) == {"attempt_x"}  # another assignment's: untouched

    sent: list[object] = []

    async def send(frame: object) -> None:
        sent.append(frame)

    relay.links.open(MACHINE, lambda: None, send)  # it comes back, still running one of them
    await relay.on_hello(MACHINE, ("attempt_live", "attempt_x"))
    assert [(f.attempt_id, f.reason) for f in sent if isinstance(f, StopWorkerFrame)] == [
        ("attempt_live", "lease_expired"),
        ("attempt_x", "control_restarted"),
    ]


def _turns(control: Any, session_id: str) -> dict[str, dict[str, Any]]:
    return {t["turnId"]: t for t in control.call("turn", "list", session_id)["turns"]}


def test_a_machine_that_never_comes_back_holds_its_session_only_until_its_lease_expires(
    tmp_path: Path,
) -> None:
    with enrolled_pair(tmp_path, SLOW) as (control, execution, project_id):
        created = control.call("session", "create", "--project-id", project_id, "--machine",
                               "box", "--executor", "user:slow")  # fmt: skip
        session_id = created["session"]["sessionId"]
        one = control.call("turn", "send", session_id, "one", "--command-id", "o")["turn"]
        wait_for(lambda: _turns(control, session_id)[one["turnId"]]["state"] == "running",
                 "the placed turn did not start", control)  # fmt: skip
        two = control.call("turn", "send", session_id, "two", "--command-id", "t")["turn"]
        execution.kill9()  # its workers die with it; it never connects again
        wait_for(lambda: not link_of(control, "box")["connected"],
                 "Control still sees the link", control, timeout_s=40)  # fmt: skip
        # Expiry comes at most the 30 s lease and the 15 s grace after the last grant;
        # the queued turn's new worker then waits the 20 s placement bound: generous here.
        wait_for(lambda: all(t["state"] in ("completed", "failed", "interrupted")
                             for t in _turns(control, session_id).values()),
                 "the turns of a Session on a machine gone for good never ended", control,
                 timeout_s=240)  # fmt: skip
        turns = _turns(control, session_id)
        assert turns[one["turnId"]]["state"] == "failed"
        assert turns[one["turnId"]]["failureReason"] == "runtime_lost", turns[one["turnId"]]
        assert turns[two["turnId"]]["state"] == "failed"
        assert turns[two["turnId"]]["failureReason"] == "worker_failed", turns[two["turnId"]]
        shown = json.dumps(control.call("turn", "show", two["turnId"]))
        assert "held" in shown, shown  # placement: the machine is not connected
        assert len(_attempts(control, session_id)) == 1  # nothing was placed meanwhile
        assert "expired with no report of it" in control.log()
        session = control.call("session", "show", session_id)["session"]
        assert session["state"] not in ("failed",), session  # open: a later turn waits again


def test_a_machine_is_away_only_once_its_link_has_been_down_a_while() -> None:
    """Expiry waits while the link is up and for `EXPIRY_GRACE_MS` after it dropped (the
    assignment actor's `_away`): a partition healing, or this Control frozen a while and
    its link closed for silence, reconnects within the link's backoff, and the Node's own
    record of its bounded stop ends the turn (`interrupted`), not expiry."""
    links = LinkBoard()
    assert (links.away_ms(MACHINE, 0) or 0) > 10**15  # never connected in this run
    link = links.open(MACHINE, lambda: None)
    assert links.away_ms(MACHINE, 5_000) is None
    links.drop(link, 7_000)
    assert links.away_ms(MACHINE, 7_000 + EXPIRY_GRACE_MS) == EXPIRY_GRACE_MS
    again = links.open(MACHINE, lambda: None)
    assert links.away_ms(MACHINE, 60_000) is None
    links.drop(link, 61_000)  # an older connection's end: the newer one stays
    assert links.away_ms(MACHINE, 90_000) is None
    links.drop(again, 91_000)
    assert links.away_ms(MACHINE, 92_000) == 1_000


async def test_expiry_after_a_partition_never_overlaps_the_old_worker(tmp_path: Path) -> None:
    """The overlapping-execution test of expiry reconciliation (spec MN0 item 10): a partition
    both ways (the fault proxy) while a placed turn runs, long enough for Control's expiry:
    by then the Execution Node's own deadline stopped the worker; the turn fails
    `runtime_lost` and nothing is placed while the machine is away. After the heal the
    next epoch comes from the Node's `stopped` report, as ever, and the next turn's worker
    starts only after the old one is gone; the merged traces hold no violation (never two
    runs of one epoch, never a replacement before cleanup)."""
    log = tmp_path / "runs.log"
    with trio.fail_after(BOUND_S):
        async with _proxied(tmp_path, seed=23, config=_config(log)) as p:
            control, execution = p.control, p.execution
            created = await _blocking(control.call, "session", "create", "--project-id",
                                      p.project_id, "--machine", "box", "--executor",
                                      "user:slow")  # fmt: skip
            session_id = created["session"]["sessionId"]
            one = (await _blocking(control.call, "turn", "send", session_id, "one",
                                   "--command-id", "one"))["turn"]["turnId"]  # fmt: skip
            await _blocking(wait_for, lambda: _starts(log) == ["one"], "turn one did not start",
                            control)  # fmt: skip
            worker = int(START.findall(log.read_text())[0][1])
            epoch = _epoch(control)
            p.proxy.partition()
            await _blocking(wait_for, lambda: "expired with no report of it" in control.log(),
                            "the lease never expired at Control", control, 150)  # fmt: skip
            assert not alive(worker), "Control expired the lease while the worker still ran"
            assert "bounded stop begins" in execution.log()  # the Node's own deadline
            shown = (await _blocking(control.call, "turn", "show", one))["turn"]
            assert (shown["state"], shown.get("failureReason")) == ("failed", "runtime_lost")
            p.proxy.heal()
            await _blocking(wait_for, lambda: f"grant ({epoch + 1}, 1) applied"
                            in execution.log(), "no next epoch after the heal", execution,
                            120)  # fmt: skip
            await _blocking(control.maia, "turn", "send", session_id, "two", "--command-id",
                            "two")  # fmt: skip
            await _blocking(wait_for, lambda: "two" in _starts(log), "turn two never started",
                            control, 120)  # fmt: skip
            assert _starts(log) == ["one", "two"]  # neither ran twice
            assert "end one" not in log.read_text()
            assert len(_attempts(control, session_id)) == 2
            verdict = checked_traces(control, execution)
            assert verdict.checks > 0
