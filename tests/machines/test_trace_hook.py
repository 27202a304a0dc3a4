"""The machine trace diagnostic (`MAIA_MACHINE_TRACE`): off by default, strict, bounded."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.machine import TRACE_ENV, MachineTrace, _trace_hook
from maia.core import SystemClock
from simulations import read_trace


def test_off_unless_the_variable_is_set(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Without `MAIA_MACHINE_TRACE` nothing is written; with it, events read back strictly."""
    monkeypatch.delenv(TRACE_ENV, raising=False)
    off = MachineTrace.from_env(SystemClock())
    off.emit("note", text="nothing")
    assert not off.enabled
    path = tmp_path / "trace.jsonl"
    monkeypatch.setenv(TRACE_ENV, str(path))
    on = MachineTrace.from_env(SystemClock())
    on.emit("launch", node_id="n", assignment_id="a", lease_epoch=1)
    assert [e["event"] for e in read_trace(path)] == ["launch"]


def test_a_failed_write_is_logged_not_raised(tmp_path: Path) -> None:
    """A trace path that cannot be written (here a folder) never reaches the caller."""
    folder = tmp_path / "a-folder"
    folder.mkdir()
    trace = MachineTrace(folder, SystemClock())
    trace.emit("note", text="lost")
    assert trace.enabled
    assert list(folder.iterdir()) == []


def test_the_file_is_bounded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Past `MAX_TRACE_BYTES` nothing more is written (and the trace says it is full)."""
    monkeypatch.setattr(_trace_hook, "MAX_TRACE_BYTES", 200)
    path = tmp_path / "trace.jsonl"
    trace = MachineTrace(path, SystemClock())
    for number in range(50):
        trace.emit("note", text=f"event {number}")
    assert path.stat().st_size < 300
    assert not trace.enabled
    assert len(read_trace(path)) < 50
