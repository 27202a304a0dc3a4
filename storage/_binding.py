"""How Python's sqlite3 binds None and bytes: as it always did, without its adapter search.

sqlite3 binds int, float, str and bytearray parameters directly; any other value first goes
through its adapter protocol: a look-up in the adapter registry, then `__adapt__` on
`PrepareProtocol` and `__conform__` on the value. For `None` and `bytes` (a NULL column, an
orjson text) both attributes are missing, and the type's miss raises and clears a formatted
AttributeError: ~1.8k instructions per parameter, ~10 of them per representative mutation
(~3 % of its instructions, callgrind; docs/storage.md). Registering identity adapters for
exactly these two types ends the search at the registry: None still binds as NULL and bytes
as a BLOB. The registry is the module's, for the whole process; registering for `NoneType`
and `bytes` does not touch the fast path of the four direct types (only adapting one of them
turns it off).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Final

# `{}.get` is a C callable that answers None for None; `bytes` answers an exact bytes value
# itself (no copy).
_EMPTY: Final[dict[object, None]] = {}
_NONE: Final[Callable[[object], None]] = _EMPTY.get
sqlite3.register_adapter(type(None), _NONE)
sqlite3.register_adapter(bytes, bytes)


def fast_bindings_registered() -> bool:
    """Whether the identity adapters are in place (for the test that pins them)."""
    adapters = sqlite3.adapters
    protocol = sqlite3.PrepareProtocol
    return (
        adapters.get((type(None), protocol)) is _NONE and adapters.get((bytes, protocol)) is bytes
    )
