"""Opaque, signed, expiring cursors, and the node key that signs them.

A cursor is `c1.<base64url payload>.<base64url HMAC-SHA256>`; the payload names the Node, its
epoch, a scope (the journal or one owner), the last position or sequence served, the digest of
the filter it was issued for, and an expiry on the injected clock's monotonic reading. Anything
that does not verify, or that was issued for another Node, scope or filter, is
`invalid_cursor`. A cursor from an earlier run of the Node (another epoch: the monotonic
reading it expires on is gone), an expired one, or one behind the pruned horizon is
`cursor_reset_required`: the client starts again from a snapshot, never from a guess.

The key is 32 random bytes in a file created 0600 inside a 0700 directory; a key file that
others can read is refused, since anyone holding it could forge cursors.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
import secrets
import stat
from pathlib import Path
from typing import Final

import orjson

from maia.core import Clock, MaiaError

DEFAULT_CURSOR_TTL_MS: Final = 10 * 60 * 1000
JOURNAL_SCOPE: Final = "journal"
_PREFIX: Final = "c1"
_KEY_BYTES: Final = 32
MAX_CURSOR_LENGTH: Final = 1024


def load_or_create_node_key(path: Path) -> bytes:
    """Read the node key at `path`, creating it (0600, parent 0700) on first use.

    Raises `configuration_invalid` if the file is readable by group or others, or is not a
    key this code wrote.
    """
    if not path.parent.exists():
        path.parent.mkdir(mode=0o700, parents=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        pass
    else:
        with os.fdopen(fd, "wb") as handle:
            handle.write(secrets.token_bytes(_KEY_BYTES))
            handle.flush()
            os.fsync(handle.fileno())
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        raise MaiaError(
            "configuration_invalid",
            f"the node key {path} is readable by others (mode {mode:o}); chmod 600 it",
            {"detail": "node key permissions", "path": str(path)},
        )
    key = path.read_bytes()
    if len(key) != _KEY_BYTES:
        raise MaiaError(
            "configuration_invalid",
            f"the node key {path} is not {_KEY_BYTES} bytes",
            {"detail": "node key size", "path": str(path)},
        )
    return key


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _invalid(reason: str) -> MaiaError:
    return MaiaError(
        "invalid_cursor", f"the cursor is not one this Node issued ({reason})", {"path": "cursor"}
    )


def _reset(reason: str) -> MaiaError:
    return MaiaError(
        "cursor_reset_required", f"the cursor can no longer be served: {reason}", {"reason": reason}
    )


class CursorSigner:
    """Issues and opens cursors for one run (epoch) of one Node."""

    def __init__(self, key: bytes, *, node_id: str, node_epoch: int, clock: Clock) -> None:
        self._key = key
        self._node_id = node_id
        self._epoch = node_epoch
        self._clock = clock

    def _mac(self, payload: bytes) -> bytes:
        return hmac.new(self._key, payload, hashlib.sha256).digest()

    def issue(
        self,
        *,
        position: int,
        filter_digest: str,
        scope: str = JOURNAL_SCOPE,
        ttl_ms: int = DEFAULT_CURSOR_TTL_MS,
    ) -> str:
        """A cursor to continue after `position` in `scope` with the filter `filter_digest`."""
        expires = self._clock.monotonic_ms() + ttl_ms
        payload = orjson.dumps(
            [self._node_id, self._epoch, scope, position, filter_digest, expires]
        )
        return f"{_PREFIX}.{_b64(payload)}.{_b64(self._mac(payload))}"

    def open(
        self,
        cursor: str,
        *,
        filter_digest: str,
        scope: str = JOURNAL_SCOPE,
        oldest_retained: int | None = None,
    ) -> int:
        """The position a cursor continues after.

        Raises `invalid_cursor` (malformed, forged, another Node, scope or filter) or
        `cursor_reset_required` (another epoch, expired, behind `oldest_retained`).
        """
        if not isinstance(cursor, str) or len(cursor) > MAX_CURSOR_LENGTH:
            raise _invalid("malformed")
        parts = cursor.split(".")
        if len(parts) != 3 or parts[0] != _PREFIX:
            raise _invalid("malformed")
        try:
            payload = _unb64(parts[1])
            mac = _unb64(parts[2])
        except (binascii.Error, ValueError):
            raise _invalid("malformed") from None
        if not hmac.compare_digest(mac, self._mac(payload)):
            raise _invalid("signature")
        try:
            node_id, epoch, issued_scope, position, issued_filter, expires = orjson.loads(payload)
        except (orjson.JSONDecodeError, ValueError, TypeError):
            raise _invalid("malformed") from None
        if node_id != self._node_id:
            raise _invalid("another Node")
        if issued_scope != scope or issued_filter != filter_digest:
            raise _invalid("issued for another scope or filter")
        if epoch != self._epoch:
            raise _reset("the Node restarted since it was issued")
        if self._clock.monotonic_ms() >= expires:
            raise _reset("expired")
        if oldest_retained is not None and position + 1 < oldest_retained:
            raise _reset("events it continues from were pruned")
        return int(position)
