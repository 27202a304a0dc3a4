"""The simulation's named lease scenarios staged over the real transport: two real Node
processes on 127.0.0.1, the fault proxy (`simulations.start_proxy`) between them, and each
run's machine traces judged by `simulations.check_trace` (never two runs of one epoch,
never a replacement before cleanup, every acknowledged record stored once, placement only
under item 9). Each asserts the spec's MN0 outcome: the faulted or replayed frame changes
nothing, the epoch stays, and a turn still completes once the link is clean."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import attrs
import trio

from simulations import LoopbackProxy, ProxySettings, start_proxy

from ._nodes import NodeProc, checked_traces, enroll, link_of, stop_pair, trace_events, wait_for
from .test_placement_e2e import CONFIG, _attempts, _epoch, _turn

BOUND_S = 300  # the whole scenario, generously (two Node processes on a loaded host)
_APPLIED = re.compile(r"grant \((\d+), (\d+)\) applied")


def _blocking(function: Any, *args: Any) -> Any:
    return trio.to_thread.run_sync(lambda: function(*args))


@attrs.frozen
class Proxied:
    control: NodeProc
    execution: NodeProc
    proxy: LoopbackProxy
    project_id: str


@asynccontextmanager
async def _proxied(tmp_path: Path, seed: int, settings: ProxySettings | None = None,
                   config: str = CONFIG) -> AsyncIterator[Proxied]:  # fmt: skip
    """A Control Node (`config` its config.jsonc) and an Execution Node enrolled as `box`
    that dials it through the proxy; both write their machine traces."""
    home = tmp_path / "control"
    home.mkdir(mode=0o700)
    (home / "config.jsonc").write_text(config)
    control = NodeProc(home, "--machines-listen", "127.0.0.1:0")
    execution: NodeProc | None = None
    async with trio.open_nursery() as nursery:
        try:
            await _blocking(control.start)
            port = await _blocking(control.machines_port)
            proxy = await start_proxy(nursery, port, seed=seed, settings=settings)
            token = tmp_path / "token.txt"
            token.write_text(await _blocking(enroll, control, "box"))
            execution = NodeProc(tmp_path / "execution", "--execution", "--control",
                                 f"ws://127.0.0.1:{proxy.port}", "--enrollment-file",
                                 str(token))  # fmt: skip
            await _blocking(execution.start)
            await _blocking(wait_for, lambda: link_of(control, "box").get("heartbeats", 0) >= 1,
                            "the Execution Node did not connect", control)  # fmt: skip
            project = tmp_path / "project"
            project.mkdir()
            added = await _blocking(control.call, "project", "add", str(project))
            yield Proxied(control, execution, proxy, added["project"]["projectId"])
        finally:
            await _blocking(stop_pair, control, execution)
            nursery.cancel_scope.cancel()


async def _session(p: Proxied) -> str:
    created = await _blocking(p.control.call, "session", "create", "--project-id",
                              p.project_id, "--machine", "box")  # fmt: skip
    session_id: str = created["session"]["sessionId"]
    return session_id


async def _turn_answers(p: Proxied, session_id: str, text: str) -> str:
    sent = await _blocking(p.control.maia, "turn", "send", session_id, text, "--wait",
                           "--timeout", "120s")  # fmt: skip
    out: str = sent.stdout
    assert text in out
    return out


def _fates(proxy: LoopbackProxy, fate: str) -> int:
    return sum(1 for event in proxy.events if event.fate.value == fate)


def _applied(execution: NodeProc) -> list[tuple[int, int]]:
    return [(int(e), int(s)) for e, s in _APPLIED.findall(execution.log())]


async def _unchanged(p: Proxied, session_id: str, epoch: int, attempts: int) -> None:
    """The MN0 outcome after a clean link: same epoch, no bounded stop, no extra attempt,
    a turn completes, and the merged traces hold no violation."""
    await _turn_answers(p, session_id, "after the fault")
    assert _epoch(p.control) == epoch  # no relaunch: nothing was replaced
    assert "bounded stop begins" not in p.execution.log()
    assert len(_attempts(p.control, session_id)) == attempts  # no second run
    verdict = checked_traces(p.control, p.execution)
    assert verdict.checks > 0
    print(f"\ntrace: {verdict}; proxy decisions: {len(p.proxy.events)}")


async def test_delayed_delivery_changes_no_outcome(tmp_path: Path) -> None:
    """Every frame both ways delayed 100 to 1200 ms (order kept) while a Session is placed
    and runs a turn: the turn completes once, in one worker, at the same epoch."""
    with trio.fail_after(BOUND_S):
        async with _proxied(tmp_path, seed=1) as p:
            p.proxy.set_faults(None, delay_ms=(100, 1200))
            session_id = await _session(p)
            await _turn_answers(p, session_id, "delayed hello")
            delayed = sum(1 for event in p.proxy.events if event.delay_ms > 0)
            assert delayed > 0
            p.proxy.heal()
            await _unchanged(p, session_id, _epoch(p.control), 1)


async def test_lost_grant_response_is_answered_again(tmp_path: Path) -> None:
    """Every frame toward the Node lost across one renewal (shorter than the lease): the
    Node retries the same request, Control answers it again (a duplicate, no new grant),
    and after the heal the Node applies exactly the grant Control issued; nothing stops."""
    with trio.fail_after(BOUND_S):
        async with _proxied(tmp_path, seed=2) as p:
            session_id = await _session(p)
            await _turn_answers(p, session_id, "before")
            epoch = _epoch(p.control)
            seen = len(_applied(p.execution))
            await _blocking(wait_for, lambda: len(_applied(p.execution)) > seen,
                            "no renewal applied", p.execution)  # fmt: skip
            issued_before = len(trace_events(p.control, "grant_issued"))
            p.proxy.set_faults("to_node", loss=1.0)  # right after a renewal: ~15 s to the next
            await _blocking(wait_for, lambda: len(trace_events(p.control, "grant_issued"))
                            > issued_before, "no renewal was issued", p.control)  # fmt: skip
            issued = trace_events(p.control, "grant_issued")[issued_before]["grant"]
            pair = (issued["leaseEpoch"], issued["renewalSequence"])
            await trio.sleep(2.5)  # the Node's retries (every second) are answered, and lost
            assert pair not in _applied(p.execution)
            lost = _fates(p.proxy, "lost")
            p.proxy.heal()
            await _blocking(wait_for, lambda: pair in _applied(p.execution),
                            "the retried request's grant was not applied", p.execution)  # fmt: skip
            assert lost > 0
            # One grant per renewal: the retries were answered with the same one.
            sequences = [e["grant"]["renewalSequence"] for e in
                         trace_events(p.control, "grant_issued")]  # fmt: skip
            assert len(sequences) == len(set(sequences)), sequences
            await _unchanged(p, session_id, epoch, 1)


async def test_a_stale_report_changes_nothing(tmp_path: Path) -> None:
    """Frames toward Control reordered (one held back until after the next): every other
    status arrives after a newer one; Control refuses each stale report (counted), keeps
    its state, and the link, epoch and placement carry on."""
    settings = ProxySettings(reorder_hold_s=10.0)
    with trio.fail_after(BOUND_S):
        async with _proxied(tmp_path, seed=3, settings=settings) as p:
            session_id = await _session(p)
            await _turn_answers(p, session_id, "before")
            epoch = _epoch(p.control)
            refused = int(link_of(p.control, "box").get("refusedFrames", 0))
            p.proxy.set_faults("to_control", reorder=1.0)
            await _blocking(wait_for, lambda: int(link_of(p.control, "box")
                            .get("refusedFrames", 0)) > refused,
                            "no stale report was refused", p.control)  # fmt: skip
            assert _fates(p.proxy, "reordered") > 0
            p.proxy.heal()
            assert link_of(p.control, "box")["connected"]
            await _unchanged(p, session_id, epoch, 1)


async def test_replayed_frames_change_nothing(tmp_path: Path) -> None:
    """Every frame both ways delivered twice while a Session is placed and runs a turn:
    one worker starts (a replayed launch starts none), the turn runs once (a replayed
    prompt runs nothing) and each evidence record is stored once."""
    with trio.fail_after(BOUND_S):
        async with _proxied(tmp_path, seed=4) as p:
            p.proxy.set_faults(None, duplicate=1.0)
            session_id = await _session(p)
            await _turn_answers(p, session_id, "replayed hello")
            assert _fates(p.proxy, "duplicated") > 0
            p.proxy.heal()
            turn = _turn(p.control, session_id)
            shown = await _blocking(p.control.call, "turn", "show", turn["turnId"])
            assert json.dumps(shown).count("replayed hello") >= 1
            stored = [(e["source"], e["sequence"]) for e in
                      trace_events(p.control, "record_stored")]  # fmt: skip
            assert len(stored) == len(set(stored)), stored
            await _unchanged(p, session_id, _epoch(p.control), 1)


async def test_renewal_answers_out_of_order_change_nothing(tmp_path: Path) -> None:
    """Frames toward the Node reordered across renewals (a grant held back until after the
    next frame, e.g. the answer to its own retry): the Node applies each renewal once, in
    order, its lease never lapses, and nothing is stopped or relaunched."""
    settings = ProxySettings(reorder_hold_s=10.0)
    with trio.fail_after(BOUND_S):
        async with _proxied(tmp_path, seed=5, settings=settings) as p:
            session_id = await _session(p)
            await _turn_answers(p, session_id, "before")
            epoch = _epoch(p.control)
            seen = len(_applied(p.execution))
            p.proxy.set_faults("to_node", reorder=1.0)
            await _blocking(wait_for, lambda: len(_applied(p.execution)) > seen,
                            "no renewal applied under reordering", p.execution,
                            90)  # fmt: skip
            assert _fates(p.proxy, "reordered") > 0
            p.proxy.heal()
            applied = _applied(p.execution)
            assert applied == sorted(set(applied)), applied  # each once, in order
            await _unchanged(p, session_id, epoch, 1)
