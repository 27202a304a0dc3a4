"""Traces of real runs: a JSON Lines format, a writer, a strict reader, and the checker.

A real run (two Node processes, the fault proxy between them) records what happened as one
JSON object per line; `check_trace` replays the events into the same `Checker` the
simulated world feeds, so a real run is judged by the simulation's own rule set. The format
is in docs/simulation.md ("Traces of real runs"). Every line is checked strictly: an unknown
event or field, a missing field or a value of the wrong type raises `TraceError` naming the
line and the field, and a grant or status is parsed by the one MN0 decoder.
"""

from __future__ import annotations

import pathlib
from collections.abc import Iterable, Mapping
from typing import Any

import attrs
import orjson

from maia.core import Clock, MaiaError, SystemClock
from supervision.leases import MachineLeaseGrant, NodeStatus, parse_wire

from ._checker import Checker, Violation

MAX_LINE_BYTES = 64 * 1024
MAX_EVENTS = 1_000_000
MAX_TEXT = 400
MAX_THROUGH_STEP = 100_000  # one acknowledgement may cover at most this many records

_NODE = {"node_id": str, "assignment_id": str, "lease_epoch": int}
TRACE_SCHEMA: dict[str, dict[str, type]] = {
    "discontinuity": {"cause": str},
    "grant_issued": {"grant": dict, "control_mono_ms": int},
    "report_received": {"status": dict, "control_mono_ms": int},
    "launch": _NODE,
    "placement": {**_NODE, "control_mono_ms": int, "admitted": bool},
    "run_started": {**_NODE, "run_id": str},
    "run_stopped": {**_NODE, "run_id": str},
    "record_stored": {"source": str, "sequence": int},
    "record_acknowledged": {"source": str, "through": int},
    "frame": {
        "connection": int,
        "direction": str,
        "sequence": int,
        "kind": str,
        "size": int,
        "fate": str,
        "delay_ms": int,
    },
    "note": {"text": str},
}
"""Each event's fields besides `at_ms` (the host's monotonic ms) and `event`."""


class TraceError(ValueError):
    """A trace line that is not in the format; names the line (1-based) and the field."""

    def __init__(self, line: int, field: str, detail: str) -> None:
        super().__init__(f"trace line {line}: {field}: {detail}")
        self.line = line
        self.field = field
        self.detail = detail


def parse_event(value: object, line: int = 0) -> dict[str, Any]:
    """Check one event; return it unchanged (raises `TraceError`)."""
    if not isinstance(value, dict):
        raise TraceError(line, "$", "an event is a JSON object")
    kind = value.get("event")
    if not isinstance(kind, str) or kind not in TRACE_SCHEMA:
        raise TraceError(line, "event", f"unknown event {kind!r}; known: {sorted(TRACE_SCHEMA)}")
    fields = {"at_ms": int, "event": str, **TRACE_SCHEMA[kind]}
    for name in value:
        if name not in fields:
            raise TraceError(line, name, f"not a field of {kind}")
    for name, expected in fields.items():
        if name not in value:
            raise TraceError(line, name, "missing")
        _check_value(line, name, value[name], expected)
    for name, shape in (("grant", MachineLeaseGrant), ("status", NodeStatus)):
        if name in value:
            try:
                parse_wire(shape, value[name])
            except MaiaError as error:
                raise TraceError(line, name, error.message) from None
    return value


def _check_value(line: int, name: str, value: object, expected: type) -> None:
    if expected is int:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise TraceError(line, name, f"a non-negative integer, not {value!r}")
    elif not isinstance(value, expected):
        raise TraceError(line, name, f"a {expected.__name__}, not {type(value).__name__}")
    elif isinstance(value, str) and not 0 < len(value) <= MAX_TEXT:
        raise TraceError(line, name, f"a string of 1 to {MAX_TEXT} characters")


def read_trace(path: pathlib.Path) -> list[dict[str, Any]]:
    """Every event of a JSON Lines trace file, checked (raises `TraceError`)."""
    events: list[dict[str, Any]] = []
    with path.open("rb") as file:
        for number, raw in enumerate(file, start=1):
            if number > MAX_EVENTS:
                raise TraceError(number, "$", f"more than {MAX_EVENTS} events")
            if len(raw) > MAX_LINE_BYTES:
                raise TraceError(number, "$", f"a line longer than {MAX_LINE_BYTES} bytes")
            if not raw.strip():
                continue
            try:
                value = orjson.loads(raw)
            except orjson.JSONDecodeError as error:
                raise TraceError(number, "$", f"not JSON: {error}") from None
            events.append(parse_event(value, number))
    return events


@attrs.define
class TraceWriter:
    """Appends checked events to `path` (when given) and keeps them in `events`.

    `at_ms` is `clock.monotonic_ms()`: on Linux CLOCK_BOOTTIME, one clock for every process
    of the host, so traces written by several processes merge by `at_ms`.
    """

    path: pathlib.Path | None = None
    clock: Clock = attrs.Factory(SystemClock)
    events: list[dict[str, Any]] = attrs.Factory(list)

    def emit(self, event: str, **fields: object) -> dict[str, Any]:
        if len(self.events) >= MAX_EVENTS:
            raise TraceError(len(self.events) + 1, "$", f"more than {MAX_EVENTS} events")
        value = parse_event({"at_ms": self.clock.monotonic_ms(), "event": event, **fields})
        self.events.append(value)
        if self.path is not None:
            with self.path.open("ab") as file:
                file.write(orjson.dumps(value) + b"\n")
        return value


def merge_traces(*traces: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Several processes' events in one order: by `at_ms`, each trace's order kept on ties."""
    merged = [dict(event) for trace in traces for event in trace]
    return sorted(merged, key=lambda event: int(event["at_ms"]))


@attrs.frozen
class TraceVerdict:
    events: int
    checks: int
    violations: tuple[Violation, ...]


def check_trace(events: Iterable[Mapping[str, Any]], seed: int = 0) -> TraceVerdict:
    """Judge a real run's events by the simulation's invariants (see `Checker`).

    Liveness is not judged (a real run names no heal time); events are taken in order.
    """
    checker = Checker(seed)
    count = 0
    for number, raw in enumerate(events, start=1):
        event = parse_event(dict(raw), number)
        _apply(checker, event, number)
        count += 1
    return TraceVerdict(count, checker.checks, tuple(checker.violations))


def _apply(checker: Checker, event: dict[str, Any], line: int) -> None:
    kind, t = event["event"], event["at_ms"]
    if kind == "discontinuity":
        checker.discontinuity()
    elif kind == "grant_issued":
        grant = parse_wire(MachineLeaseGrant, event["grant"])
        checker.grant_issued(grant, event["control_mono_ms"])
    elif kind == "report_received":
        status = parse_wire(NodeStatus, event["status"])
        checker.status_delivered(status, event["control_mono_ms"])
    elif kind == "launch":
        checker.launch(t, event["node_id"], event["assignment_id"], event["lease_epoch"])
    elif kind == "placement":
        checker.placement(
            t,
            event["node_id"],
            event["assignment_id"],
            event["lease_epoch"],
            event["control_mono_ms"],
            event["admitted"],
        )
    elif kind in ("run_started", "run_stopped"):
        where = (event["node_id"], event["assignment_id"], event["lease_epoch"], event["run_id"])
        if kind == "run_started":
            checker.run_started(t, *where)
        else:
            checker.run_ended(*where)
    elif kind == "record_stored":
        checker.record_stored(t, event["source"], event["sequence"])
    elif kind == "record_acknowledged":
        done = checker.acknowledged.get(event["source"], 0)
        if event["through"] - done > MAX_THROUGH_STEP:
            raise TraceError(line, "through", f"more than {MAX_THROUGH_STEP} records at once")
        checker.record_acknowledged(t, event["source"], event["through"])
