"""Pages written, from SQLite's own count: the WAL frames a database's write-ahead log holds.

Every page a commit writes is one WAL frame. `wal_frames` reads `mxFrame` (the index of the
last valid frame) from the WAL-index header at the start of the `-shm` file, the field
SQLite's readers use (https://sqlite.org/walformat.html, "The WAL-Index Header"): a 48-byte
header stored twice, native byte order, mxFrame at offset 16; a reader takes it when both
copies agree. Reading it costs no transaction and changes nothing.

A checkpoint that restarts the log sets mxFrame back to 0, so `frames_during` reports None
for a span in which that happened (the caller drops that sample).
"""

from __future__ import annotations

import struct
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

_HEADER = 48
_MX_FRAME = 16
_ENDIAN = "<" if sys.byteorder == "little" else ">"


def wal_frames(db: Path) -> int:
    """The frames in `db`'s write-ahead log now (0 before it has one)."""
    shm = Path(f"{db}-shm")
    for _ in range(100):  # bounded: a writer updates the two copies one after the other
        try:
            head = shm.read_bytes()[: 2 * _HEADER]
        except FileNotFoundError:
            return 0
        if len(head) < 2 * _HEADER:
            return 0
        if head[:_HEADER] == head[_HEADER:]:
            return int(struct.unpack_from(f"{_ENDIAN}I", head, _MX_FRAME)[0])
    raise RuntimeError(f"the WAL-index header of {db} kept changing")


async def frames_during(db: Path, work: Callable[[], Awaitable[object]]) -> int | None:
    """The WAL frames written while `work()` ran, or None when the log restarted meanwhile."""
    before = wal_frames(db)
    await work()
    after = wal_frames(db)
    return after - before if after >= before else None
