"""A test-only diagnostic: the machine link's decisions as a real-run trace (the JSON Lines
format of docs/simulation.md, "The trace format"), so `simulations.check_trace` judges a
real run by the simulation's own invariants. The layers forbid importing `simulations`
here (it sits above every other package), so the lines are written directly, in the same
shape `simulations.TraceWriter` writes; `simulations.read_trace` checks them strictly.

Off unless `MAIA_MACHINE_TRACE=PATH` is set when the Node starts. The file is bounded
(`MAX_TRACE_BYTES`: past it nothing more is written and one warning is logged), the writer
keeps no events in memory, and a failure to write never reaches the link: a diagnostic
must not change what it observes.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Final

import orjson

from maia.core import Clock

log = logging.getLogger("maia.machines")
TRACE_ENV: Final = "MAIA_MACHINE_TRACE"
MAX_TRACE_BYTES: Final = 16 * 1024 * 1024


class MachineTrace:
    """Emits trace events to one file, or nothing at all (`enabled` False)."""

    def __init__(self, path: Path | None, clock: Clock) -> None:
        self.path = path
        self.clock = clock
        self._full = False

    @classmethod
    def from_env(cls, clock: Clock) -> MachineTrace:
        value = os.environ.get(TRACE_ENV, "").strip()
        return cls(Path(value) if value else None, clock)

    @property
    def enabled(self) -> bool:
        return self.path is not None and not self._full

    def emit(self, event: str, **fields: object) -> None:
        if not self.enabled:
            return
        assert self.path is not None
        try:
            size = self.path.stat().st_size if self.path.exists() else 0
            if size >= MAX_TRACE_BYTES:
                self._full = True
                log.warning("machine trace %s reached %d bytes: no more events are written",
                            self.path, MAX_TRACE_BYTES)  # fmt: skip
                return
            line = orjson.dumps({"at_ms": self.clock.monotonic_ms(), "event": event, **fields})
            with self.path.open("ab") as file:  # one line per write: the Nodes' files merge
                file.write(line + b"\n")
        except Exception:  # a diagnostic never takes the link down
            log.exception("machine trace: event %s not written", event)
