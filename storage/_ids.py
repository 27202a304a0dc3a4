"""IDs for rows written on the hot path: time-ordered (new aggregates, snapshots; events and
receipts until issue 21 goal 4) and positioned (events and receipts: see the end).

`new_ordered_id(prefix)` is `<prefix>_<50 hex>`: 12 hex digits of wall-clock milliseconds,
6 of a sequence within that millisecond, then 32 random (128 bits, as the spec's identifier
grammar asks of every ID; until registry 0.9.0 the tail was 14 random digits in a 32-digit
ID, and such rows stay valid: `maia.core.GENERATED_ID_PATTERN` takes both).

Why time first: an index on a random key puts each insert on a random leaf page, so a batch
of 60 mutations dirtied ~60 pages per such index and wrote them all to the WAL at commit.
Within one process the IDs strictly increase
(the sequence also carries them past a clock that steps back), so an insert is an append to
the rightmost page, which SQLite splits cheaply and fills completely; a random tail within
the millisecond still inserted mid-page. See docs/storage.md for the measured effect.

The time is only an ordering hint for the B-tree: nothing decides on it, so it is read from
the OS rather than the injected clock (like `new_id`'s randomness).

`positioned_id(prefix, position)` is the same shape with the row's own integer key in place
of the time: `<prefix>_f<17 hex position><32 hex random>` (a time-led ID starts with `0`
until the year 2527, so the `f` tells them apart). A row keyed by its position needs no index
of its own for such an ID: `id_position` reads the key back, and a look-up checks the whole
ID on that one row (events by journal position, receipts by sequence: issue 21 goal 4,
docs/storage.md).
"""

from __future__ import annotations

import re
import threading
import time
from typing import Final

from maia.core import ID_PREFIXES, random_hex

_MAX_SEQUENCE: Final = 0xFFFFFF
POSITIONED_MARK: Final = "f"
_MAX_POSITION: Final = 16**17 - 1
_POSITIONED_TAIL: Final = re.compile("[0-9a-f]{49}")
_lock = threading.Lock()
_last_ms = 0
_sequence = 0


def new_ordered_id(prefix: str) -> str:
    """A fresh `<prefix>_<12 hex ms><6 hex sequence><32 hex random>` ID, greater than every
    ID this process made before; raises ValueError for an unknown prefix."""
    global _last_ms, _sequence
    if prefix not in ID_PREFIXES:
        raise ValueError(f"unknown ID prefix {prefix!r}")
    now_ms = time.time_ns() // 1_000_000
    with _lock:
        if now_ms > _last_ms:
            _last_ms, _sequence = now_ms, 0
        elif _sequence < _MAX_SEQUENCE:
            _sequence += 1  # same millisecond, or the clock stepped back: stay after the last
        else:
            _last_ms, _sequence = _last_ms + 1, 0
        ms, sequence = _last_ms, _sequence
    return f"{prefix}_{ms:012x}{sequence:06x}{random_hex()}"


def positioned_id(prefix: str, position: int) -> str:
    """A fresh `<prefix>_f<17 hex position><32 hex random>` ID for the row at `position`
    (1..16**17-1); raises ValueError for an unknown prefix or a position out of range."""
    if prefix not in ID_PREFIXES:
        raise ValueError(f"unknown ID prefix {prefix!r}")
    if not 1 <= position <= _MAX_POSITION:
        raise ValueError(f"position {position} is outside 1..{_MAX_POSITION}")
    return f"{prefix}_{POSITIONED_MARK}{position:017x}{random_hex()}"


_EVENT_HEAD: Final = f"event_{POSITIONED_MARK}"


def positioned_event_id(position: int) -> str:
    """`positioned_id("event", position)`, without looking the prefix up (an event's ID is
    made at every append)."""
    if not 1 <= position <= _MAX_POSITION:
        raise ValueError(f"position {position} is outside 1..{_MAX_POSITION}")
    return f"{_EVENT_HEAD}{position:017x}{random_hex()}"


def id_position(prefix: str, value: str) -> int | None:
    """The position a `positioned_id` of `prefix` carries; None for any other string (a
    time-led or random ID, another prefix, a malformed one)."""
    head = f"{prefix}_{POSITIONED_MARK}"
    if not value.startswith(head) or not _POSITIONED_TAIL.fullmatch(value, len(head)):
        return None
    position = int(value[len(head) : len(head) + 17], 16)
    return position if position >= 1 else None
