"""The real-run trace format and its checker: a clean run passes, each planted violation is
caught by the simulation's own invariant, and a malformed line is a typed error."""

from __future__ import annotations

import pathlib
from typing import Any

import attrs
import orjson
import pytest

from maia.core import FakeClock
from simulations import (
    TRACE_SCHEMA,
    Duo,
    TraceError,
    TraceWriter,
    check_trace,
    merge_traces,
    parse_event,
    read_trace,
)
from supervision.leases import GrantArrived, NodeStatus, node_report, to_wire

SOURCE = "a1.evidence"


def _wire_run() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """A grant, a running report confirming it and a stopped report, from the real machines."""
    duo = Duo()
    grant = duo.issue(duo.launch(0), 1_000, 30_000)
    duo.node_do(GrantArrived(grant), 1_100)
    report = node_report(duo.node, duo.n_now(1_200))
    assert report is not None
    assert report.phase == "running"
    running = NodeStatus("n1", 1, 1, (report,))
    stopped = NodeStatus("n1", 1, 2, (attrs.evolve(report, phase="stopped"),))
    return to_wire(grant), to_wire(running), to_wire(stopped)


def ev(at_ms: int, event: str, **fields: object) -> dict[str, Any]:
    return {"at_ms": at_ms, "event": event, **fields}


def run(node: str, epoch: int, run_id: str) -> dict[str, object]:
    return {"node_id": node, "assignment_id": "a1", "lease_epoch": epoch, "run_id": run_id}


def place(node: str, epoch: int) -> dict[str, object]:
    return {"node_id": node, "assignment_id": "a1", "lease_epoch": epoch}


def clean_run() -> list[dict[str, Any]]:
    """Epoch 1 on n1 runs, is acknowledged, stops and is reconciled; epoch 2 goes to n2."""
    grant, running, stopped = _wire_run()
    return [
        ev(0, "launch", **place("n1", 1)),
        ev(1_000, "grant_issued", grant=grant, control_mono_ms=1_000),
        ev(1_100, "run_started", **run("n1", 1, "pid-100")),
        ev(1_200, "report_received", status=running, control_mono_ms=1_200),
        ev(1_300, "placement", **place("n1", 1), control_mono_ms=1_300, admitted=True),
        ev(1_400, "record_stored", source=SOURCE, sequence=1),
        ev(1_410, "record_stored", source=SOURCE, sequence=2),
        ev(1_500, "record_acknowledged", source=SOURCE, through=2),
        ev(
            1_600,
            "frame",
            connection=1,
            direction="to_node",
            sequence=3,
            kind="text",
            size=10,
            fate="lost",
            delay_ms=0,
        ),
        ev(9_000, "run_stopped", **run("n1", 1, "pid-100")),
        ev(9_100, "report_received", status=stopped, control_mono_ms=9_100),
        ev(9_200, "launch", **place("n2", 2)),
        ev(9_300, "run_started", **run("n2", 2, "pid-200")),
        ev(9_400, "note", text="the end"),
    ]


def invariants(events: list[dict[str, Any]]) -> list[str]:
    return [v.invariant for v in check_trace(events, seed=5).violations]


def test_a_clean_run_passes_and_is_really_checked() -> None:
    """The clean trace breaks no invariant, and the checker made checks of every kind."""
    verdict = check_trace(clean_run())
    assert verdict.violations == ()
    assert verdict.events == 14
    assert verdict.checks >= 10  # item 9 (5), two runs, one replacement, three records


def test_two_live_runs_of_one_epoch_are_caught() -> None:
    """A second process for the same assignment epoch while the first lives."""
    events = clean_run()
    events.insert(3, ev(1_150, "run_started", **run("n1", 1, "pid-101")))
    events.insert(11, ev(9_050, "run_stopped", **run("n1", 1, "pid-101")))
    assert invariants(events) == ["two_executions"]


def test_a_new_epoch_running_beside_the_old_is_caught() -> None:
    """Epoch 2 starting before epoch 1's process is gone."""
    events = clean_run()
    stop = events.pop(9)  # run_stopped of epoch 1 ...
    events.append(ev(9_500, **{k: v for k, v in stop.items() if k != "at_ms"}))  # ... late
    assert invariants(events) == ["two_executions"]


def test_a_replacement_before_cleanup_is_caught() -> None:
    """Control launching epoch 2 before hearing epoch 1 stopped (item 10)."""
    events = clean_run()
    del events[10]  # the stopped report never arrived
    assert invariants(events) == ["replacement_before_cleanup"]


def test_a_stopped_report_from_another_node_does_not_reconcile() -> None:
    """Only the Node that held the epoch can report it stopped."""
    _, _, stopped = _wire_run()
    stranger = {**stopped, "nodeId": "n9"}
    events = clean_run()
    events[10] = ev(9_100, "report_received", status=stranger, control_mono_ms=9_100)
    assert invariants(events) == ["replacement_before_cleanup"]


def test_an_acknowledged_record_missing_is_caught() -> None:
    """Acknowledging through 2 while the journal holds only record 1."""
    events = clean_run()
    del events[6]
    assert invariants(events) == ["record_not_once"]


def test_a_record_stored_twice_is_caught() -> None:
    """The same evidence record written into the journal twice."""
    events = clean_run()
    events.insert(7, ev(1_420, "record_stored", source=SOURCE, sequence=2))
    assert invariants(events) == ["record_not_once", "record_not_once"]  # at store and ack


def test_a_placement_without_a_confirming_report_is_caught() -> None:
    """Item 9 on a real trace: work placed before any running report confirmed the grant."""
    events = clean_run()
    events.insert(2, ev(1_050, "placement", **place("n1", 1), control_mono_ms=1_050, admitted=True))
    assert set(invariants(events)) == {"placement_without_item9"}


def test_a_barrier_blocks_placement_until_a_newer_grant_is_confirmed() -> None:
    """A Control restart (discontinuity) after the grant makes the later placement wrong."""
    events = clean_run()
    events.insert(4, ev(1_250, "discontinuity", cause="restart"))
    assert invariants(events) == ["placement_without_item9"]


@pytest.mark.parametrize(
    ("event", "field"),
    [
        ({"at_ms": 1, "event": "teleport"}, "event"),
        ({"at_ms": 1, "event": "note", "text": "x", "extra": 1}, "extra"),
        ({"at_ms": 1, "event": "note"}, "text"),
        ({"at_ms": -1, "event": "note", "text": "x"}, "at_ms"),
        ({"at_ms": True, "event": "note", "text": "x"}, "at_ms"),
        ({"at_ms": 1, "event": "note", "text": ""}, "text"),
        ({"at_ms": 1, "event": "record_stored", "source": "s", "sequence": "1"}, "sequence"),
        (
            {
                "at_ms": 1,
                "event": "placement",
                **place("n1", 1),
                "control_mono_ms": 1,
                "admitted": "yes",
            },
            "admitted",
        ),
        (
            {
                "at_ms": 1,
                "event": "grant_issued",
                "grant": {"assignmentId": "a1"},
                "control_mono_ms": 1,
            },
            "grant",
        ),
        ([1, 2], "$"),
    ],
)
def test_a_malformed_event_is_a_typed_error_naming_the_field(event: object, field: str) -> None:
    """Unknown events and fields, missing or mistyped values, bad wire shapes: TraceError."""
    with pytest.raises(TraceError) as caught:
        parse_event(event, line=7)
    assert (caught.value.line, caught.value.field) == (7, field)


def test_a_grant_outside_the_ttl_bounds_is_refused_by_the_mn0_decoder() -> None:
    """A trace's grant is parsed by the one strict decoder (a 5 s grant is refused)."""
    grant, _, _ = _wire_run()
    short = {**grant, "expiresAt": grant["issuedAt"].replace(":00.", ":05.", 1)}
    assert short != grant
    with pytest.raises(TraceError) as caught:
        check_trace([ev(1, "grant_issued", grant=short, control_mono_ms=1)])
    assert caught.value.field == "grant"


def test_the_writer_and_reader_round_trip(tmp_path: pathlib.Path) -> None:
    """Events written with `TraceWriter` read back equal; a bad line names its number."""
    path = tmp_path / "trace.jsonl"
    writer = TraceWriter(path, FakeClock(monotonic=500))
    writer.emit("launch", **place("n1", 1))
    writer.emit("note", text="second")
    assert read_trace(path) == writer.events
    assert [e["at_ms"] for e in writer.events] == [500, 500]
    with pytest.raises(TraceError):
        writer.emit("launch", node_id="n1")  # refused before anything is written
    with path.open("ab") as file:
        file.write(orjson.dumps({"at_ms": 1, "event": "nope"}) + b"\n")
    with pytest.raises(TraceError) as caught:
        read_trace(path)
    assert caught.value.line == 3


def test_merge_orders_several_processes_by_time() -> None:
    """Events of two writers merge by `at_ms`, each keeping its order on ties."""
    a = [ev(1, "note", text="a1"), ev(5, "note", text="a2")]
    b = [ev(1, "note", text="b1"), ev(3, "note", text="b2")]
    assert [e["text"] for e in merge_traces(a, b)] == ["a1", "b1", "b2", "a2"]


def test_every_event_of_the_format_is_documented() -> None:
    """docs/simulation.md names every event of the trace format."""
    doc = (pathlib.Path(__file__).parents[2] / "docs" / "simulation.md").read_text()
    missing = [name for name in TRACE_SCHEMA if f"`{name}`" not in doc]
    assert missing == []
