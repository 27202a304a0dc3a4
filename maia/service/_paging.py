"""Page cursors for lists: signed by the storage's node key, bound to a scope and a filter.

A cursor of one list (or one filter) is refused by another (`invalid_cursor`); a cursor from
an earlier Node run or past its expiry is `cursor_reset_required` (start the list again).
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

import orjson

from maia.protocol import MaiaError, digest_json
from storage import Storage


def filter_digest(filters: Any) -> str:
    return digest_json(filters)


def issue(store: Storage, position: int, scope: str, filters: Any) -> str:
    return store.cursors.issue(position=position, scope=scope, filter_digest=filter_digest(filters))


def open_cursor(store: Storage, cursor: str, scope: str, filters: Any,
                oldest_retained: int | None = None) -> int:  # fmt: skip
    """The position `cursor` continues after. Raises `invalid_cursor` or
    `cursor_reset_required`."""
    return store.cursors.open(cursor, scope=scope, filter_digest=filter_digest(filters),
                              oldest_retained=oldest_retained)  # fmt: skip


def peek_scope(cursor: str) -> str:
    """The scope a cursor claims (unverified: `open_cursor` then verifies it with the MAC).

    Raises `invalid_cursor` when it cannot even be read.
    """
    try:
        payload = cursor.split(".")[1]
        values = orjson.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
        scope = values[2]
    except (IndexError, binascii.Error, ValueError, TypeError, orjson.JSONDecodeError):
        raise MaiaError(
            "invalid_cursor", "the cursor is not one this Node issued", {"path": "cursor"}
        ) from None
    if not isinstance(scope, str):
        raise MaiaError(
            "invalid_cursor", "the cursor is not one this Node issued", {"path": "cursor"}
        )
    return scope
