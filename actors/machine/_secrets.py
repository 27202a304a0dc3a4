"""One-time enrollment tokens and machine credentials: made, parsed, compared.

A token is `mtok1.<machineId>.<incarnation>.<mac>`, where mac is HMAC-SHA256 under the
Control Node's token key (a random 32-byte row of `machine_keys`) over machineId and
incarnation. Deriving it, rather than storing it, keeps it out of the confirm's receipt (a
replayed confirm derives the same token again) while the machines row holds only its sha256.
A credential is `mcred1.<machineId>.<random>`, made once when a token is redeemed and sent
only to the Execution Node; Control keeps its sha256. Both compare in constant time.

While Control's machine listener serves TLS, the token it prints carries a fifth part, the
sha256 fingerprint of its certificate (`pin_token`), which the Execution Node splits off
(`split_token`) and pins; the part is not a secret and not covered by the mac: what it
binds is the channel that carried the token to the Execution Node. The fingerprint of the
running listener is a `machine_keys` row (`listener_fingerprint`), written at its start.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
import sqlite3
from typing import Final

import attrs

TOKEN_PREFIX: Final = "mtok1"
CREDENTIAL_PREFIX: Final = "mcred1"
MAX_SECRET_LENGTH: Final = 256
_MACHINE_ID = r"machine_[0-9a-f]{32}"
# Each grammar is matched against the whole text (`fullmatch`): `re.match` with `$` would
# accept a trailing newline (`$` matches before a final "\n").
_TOKEN = re.compile(rf"{TOKEN_PREFIX}\.({_MACHINE_ID})\.([1-9][0-9]{{0,8}})\.([A-Za-z0-9_-]{{43}})")
_PINNED = re.compile(r"(.+)\.([0-9a-f]{64})")
FINGERPRINT_ROW: Final = "listener_fingerprint"
_CREDENTIAL = re.compile(rf"{CREDENTIAL_PREFIX}\.({_MACHINE_ID})\.([A-Za-z0-9_-]{{43}})")


def new_machine_id() -> str:
    """`machine_` and 32 hex digits (the generated-ID grammar)."""
    return f"machine_{secrets.token_hex(16)}"


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def token_key(conn: sqlite3.Connection) -> bytes:
    """The Control Node's token key, made on first use (inside a write)."""
    row = conn.execute("SELECT secret FROM machine_keys WHERE name = 'token'").fetchone()
    if row is not None:
        return bytes.fromhex(row[0])
    key = secrets.token_bytes(32)
    conn.execute("INSERT INTO machine_keys (name, secret) VALUES ('token', ?)", (key.hex(),))
    return key


def make_token(key: bytes, machine_id: str, incarnation: int) -> str:
    mac = hmac.new(key, f"{machine_id}.{incarnation}".encode(), hashlib.sha256).digest()
    text = base64.urlsafe_b64encode(mac).decode().rstrip("=")
    return f"{TOKEN_PREFIX}.{machine_id}.{incarnation}.{text}"


@attrs.frozen
class TokenParts:
    machine_id: str
    incarnation: int


def parse_token(text: str) -> TokenParts | None:
    """The machine and incarnation a well-formed token names, or None."""
    found = _TOKEN.fullmatch(text) if len(text) <= MAX_SECRET_LENGTH else None
    return None if found is None else TokenParts(found.group(1), int(found.group(2)))


def make_credential(machine_id: str) -> str:
    return f"{CREDENTIAL_PREFIX}.{machine_id}.{secrets.token_urlsafe(32)[:43]}"


def credential_machine(text: str) -> str | None:
    """The machine a well-formed credential names, or None."""
    found = _CREDENTIAL.fullmatch(text) if len(text) <= MAX_SECRET_LENGTH else None
    return None if found is None else found.group(1)


def matches(presented: str, stored_hash: str | None) -> bool:
    """Whether `presented` hashes to `stored_hash` (constant time)."""
    return stored_hash is not None and hmac.compare_digest(sha256_hex(presented), stored_hash)


def pin_token(token: str, fingerprint: str | None) -> str:
    """The token as printed: with the listener's certificate fingerprint when it has one."""
    return token if fingerprint is None else f"{token}.{fingerprint}"


def split_token(text: str) -> tuple[str, str | None]:
    """(the token Control checks, the pinned fingerprint or None)."""
    found = _PINNED.fullmatch(text) if len(text) <= MAX_SECRET_LENGTH else None
    return (text, None) if found is None else (found.group(1), found.group(2))


def listener_fingerprint(conn: sqlite3.Connection) -> str | None:
    """The certificate fingerprint of the TLS machine listener last started, or None."""
    row = conn.execute("SELECT secret FROM machine_keys WHERE name = ?",
                       (FINGERPRINT_ROW,)).fetchone()  # fmt: skip
    return None if row is None else str(row[0])


def set_listener_fingerprint(conn: sqlite3.Connection, fingerprint: str | None) -> None:
    """Written when the machine listener starts: its fingerprint, or none (plain ws://)."""
    conn.execute("DELETE FROM machine_keys WHERE name = ?", (FINGERPRINT_ROW,))
    if fingerprint is not None:
        conn.execute("INSERT INTO machine_keys (name, secret) VALUES (?, ?)",
                     (FINGERPRINT_ROW, fingerprint))  # fmt: skip
