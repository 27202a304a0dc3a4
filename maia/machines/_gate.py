"""The checks made before a machine link's WebSocket upgrade: path, key, Origin, bearer.

The machines listener may bind a non-loopback address (the user chooses it), so a stranger
may reach it: nothing is upgraded without a bearer secret of the right grammar (an
enrollment token on `/machines/v1/enroll`, a machine credential on `/machines/v1`), and a
browser (an `Origin`) is refused. The secret itself is judged on the first frame, against
storage, before anything else is read.

`Maia-Machine-Frames` (a header of the link's upgrade, comma-separated) names the optional
Control -> Execution frames the Execution Node understands (`abandon`). An older Node sends
no such header, and Control sends it none of them (the header, not a hello field: a field an
older Control does not know would fail its hello, a header it ignores).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable
from typing import Final

import attrs
import orjson

from actors.machine import MAX_SECRET_LENGTH, credential_machine, parse_token
from maia.core import MaiaError

LINK_PATH: Final = "/machines/v1"
ENROLL_PATH: Final = "/machines/v1/enroll"
FRAMES_HEADER: Final = b"Maia-Machine-Frames"
OPTIONAL_FRAMES: Final = frozenset({"abandon"})  # sent only to a Node that names them


@attrs.frozen
class Refusal:
    status: int
    error: MaiaError

    def body(self) -> bytes:
        return orjson.dumps({"ok": False, "error": self.error.to_wire()})


@attrs.frozen
class Admitted:
    """An upgrade that may proceed: which path, with which bearer secret."""

    enroll: bool
    secret: str
    frames: frozenset[str] = frozenset()  # the optional frames the Node understands


def check_machine_upgrade(path: str, headers: Iterable[tuple[bytes, bytes]]) -> Admitted | Refusal:
    found: dict[bytes, list[bytes]] = {}
    for name, value in headers:
        found.setdefault(name.lower(), []).append(value)
    route = path.split("?", 1)[0]
    if route not in (LINK_PATH, ENROLL_PATH):
        return Refusal(404, MaiaError("unknown_method", f"no machine link at {path[:64]!r}",
                                      {"path": path[:64]}))  # fmt: skip
    if not _valid_key(found.get(b"sec-websocket-key", [])):
        return Refusal(400, MaiaError("invalid_request", "the request is malformed: "
                                      "Sec-WebSocket-Key must be 16 bytes in base64",
                                      {"header": "Sec-WebSocket-Key"}))  # fmt: skip
    if b"origin" in found:
        return Refusal(403, MaiaError("unauthenticated", "requests from a browser (an Origin"
                                      " header) are refused", {"header": "Origin"}))  # fmt: skip
    secret = _bearer(found.get(b"authorization", []))
    enroll = route == ENROLL_PATH
    well_formed = secret is not None and (
        parse_token(secret) is not None if enroll else credential_machine(secret) is not None
    )
    if secret is None or not well_formed:
        what = "an enrollment token" if enroll else "a machine credential"
        return Refusal(401, MaiaError("unauthenticated", f"{what} is required (Authorization:"
                                      " Bearer)", {"header": "Authorization"}))  # fmt: skip
    return Admitted(enroll, secret, _frames(found.get(FRAMES_HEADER.lower(), [])))


def _frames(values: list[bytes]) -> frozenset[str]:
    """The optional frames named (unknown names, a repeated or oversized header: ignored)."""
    if len(values) != 1 or len(values[0]) > 256:
        return frozenset()
    names = {part.strip() for part in values[0].decode("ascii", "replace").split(",")}
    return frozenset(names & OPTIONAL_FRAMES)


def _bearer(values: list[bytes]) -> str | None:
    if len(values) != 1 or len(values[0]) > MAX_SECRET_LENGTH + 16:
        return None
    scheme, _, credential = values[0].strip().partition(b" ")
    if scheme.lower() != b"bearer":
        return None
    try:
        return credential.strip().decode("ascii")
    except UnicodeDecodeError:
        return None


def _valid_key(values: list[bytes]) -> bool:
    if len(values) != 1 or len(values[0].strip()) != 24:
        return False
    try:
        return len(base64.b64decode(values[0].strip(), validate=True)) == 16
    except (binascii.Error, ValueError):
        return False
