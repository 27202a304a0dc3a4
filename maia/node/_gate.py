"""The checks made before a WebSocket upgrade: path, key, Host, Origin, bearer token.

They guard both paths alike: `/api/v1` (requests) and `/api/v1/observations` (streams).

Loopback is not a security boundary: any local process, and any web page through the
user's browser, can reach 127.0.0.1. So the upgrade needs the bearer token from the
owner-only token file (compared in constant time), a `Host` that names the loopback
interface on our port (a DNS-rebinding page sends its own host name), and no `Origin` (only
browsers send one). A refusal is an HTTP error response; no WebSocket is opened. The
`Sec-WebSocket-Key` must be what RFC 6455 §4.1 says, 16 random bytes in base64 (wsproto
only checks that there is one).
"""

from __future__ import annotations

import base64
import binascii
import hmac
from collections.abc import Iterable

import attrs
import orjson

from maia.core import MaiaError
from maia.observe import OBSERVATIONS_PATH

API_PATH = "/api/v1"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


@attrs.frozen
class Refusal:
    """An HTTP refusal: status, the typed error in the body, extra headers."""

    status: int
    error: MaiaError
    headers: tuple[tuple[bytes, bytes], ...] = ()

    def body(self) -> bytes:
        return orjson.dumps({"ok": False, "error": self.error.to_wire()})


def check_upgrade(
    path: str,
    host: str | None,
    headers: Iterable[tuple[bytes, bytes]],
    *,
    token: str,
    port: int,
) -> Refusal | None:
    """None when the upgrade may proceed, else the refusal to send.

    `host` is the request's Host (wsproto lifts it out of `headers`).
    """
    found: dict[bytes, list[bytes]] = {}
    for name, value in headers:
        found.setdefault(name.lower(), []).append(value)
    if path.split("?", 1)[0] not in (API_PATH, OBSERVATIONS_PATH):
        return Refusal(
            404,
            MaiaError("unknown_method", f"no API at {path!r}; use {API_PATH}", {"path": path}),
        )
    if not _valid_key(found.get(b"sec-websocket-key", [])):
        return Refusal(
            400,
            MaiaError(
                "invalid_request",
                "the request is malformed: Sec-WebSocket-Key must be 16 bytes in base64",
                {"header": "Sec-WebSocket-Key"},
            ),
        )
    allowed = {f"{name}:{port}" for name in LOOPBACK_NAMES}
    if host is None or host.strip().lower() not in allowed:
        shown = host if host is not None else "(none)"
        return Refusal(
            421,
            MaiaError(
                "invalid_request",
                f"the request is malformed: Host {shown!r} is not a loopback name for port "
                f"{port} (127.0.0.1, localhost or [::1])",
                {"header": "Host"},
            ),
        )
    if b"origin" in found:
        return Refusal(
            403,
            MaiaError(
                "unauthenticated",
                "requests from a browser (an Origin header) are refused",
                {"header": "Origin"},
            ),
        )
    authorizations = found.get(b"authorization", [])
    presented = b""
    if len(authorizations) == 1:
        scheme, _, credential = authorizations[0].strip().partition(b" ")
        if scheme.lower() == b"bearer":
            presented = credential.strip()
    if not hmac.compare_digest(presented, token.encode("ascii")):
        return Refusal(
            401,
            MaiaError(
                "unauthenticated",
                "a valid bearer credential is required (Authorization: Bearer <token file>)",
                {"header": "Authorization"},
            ),
            ((b"WWW-Authenticate", b'Bearer realm="maia"'),),
        )
    return None


def _valid_key(values: list[bytes]) -> bool:
    if len(values) != 1 or len(values[0].strip()) != 24:
        return False
    try:
        return len(base64.b64decode(values[0].strip(), validate=True)) == 16
    except (binascii.Error, ValueError):
        return False
