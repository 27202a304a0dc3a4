"""A full disk (RLIMIT_FSIZE of 1 byte set on the running Node with prlimit) across a
routine's due slot, lifted 6 s after it (docs/routines.md "Fires": the durable timer armed at
`nextFireAt` claims the slot; a slot fires at most once, and the Node that is late past a slot
still fires the newest due one). Once the disk has room again the slot is claimed and fired,
exactly once, and `nextFireAt` moves to the next slot."""

from __future__ import annotations

import resource
import time
from pathlib import Path

from ..maia.service._shifted import QUARTER_MS, offset_to_slot
from ..maia.service.test_routine_restart import FIRES, create_routine, node
from ._db import query, wait_rows

UNLIMITED = (resource.RLIM_INFINITY, resource.RLIM_INFINITY)
LEAD_S = 12.0  # the slot is this far ahead of the Node's (shifted) wall clock at its start


def test_a_slot_due_while_the_disk_is_full_fires_once_space_is_back(tmp_path: Path) -> None:
    """Disk full from 3 s before the slot to 6 s after: then one fire for the slot, started."""
    home, root = tmp_path / "home", tmp_path / "app"
    home.mkdir(mode=0o700)
    root.mkdir()
    offset = offset_to_slot(LEAD_S)
    started = time.monotonic()
    with node(home, offset) as process:
        routine_id = create_routine(home, root)
        ((next_fire,),) = query(home, "SELECT next_fire_ms FROM routines")
        assert query(home, FIRES, (routine_id,)) == []
        pause = LEAD_S - 3 - (time.monotonic() - started)
        assert pause > 0, "the routine took too long to create"
        time.sleep(pause)
        try:
            resource.prlimit(process.pid, resource.RLIMIT_FSIZE, (1, resource.RLIM_INFINITY))
            time.sleep(9)  # the slot passes meanwhile
        finally:
            resource.prlimit(process.pid, resource.RLIMIT_FSIZE, UNLIMITED)
        fires = wait_rows(home, FIRES, (routine_id,),
                          lambda r: r and r[0][1] not in ("due", "launching"),
                          timeout_s=60)  # fmt: skip
        time.sleep(1)
        assert query(home, FIRES, (routine_id,)) == fires
    assert [(f[0], f[1]) for f in fires] == [(next_fire, "started")]
    assert query(home, "SELECT next_fire_ms FROM routines") == [(next_fire + QUARTER_MS,)]
