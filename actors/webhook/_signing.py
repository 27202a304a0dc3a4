"""Standard Webhooks signing: the body, the three headers, and the secret read at send time.

The wire format is the Standard Webhooks specification's (its reference library,
`standardwebhooks`, verifies our deliveries in the tests):
  * body: `{"type", "timestamp", "data"}` as compact JSON, fixed when the delivery is
    written, so every retry and redelivery sends the same bytes;
  * `webhook-id`: the message ID, the same for every attempt and redelivery of one message
    (receivers deduplicate on it: delivery is at least once);
  * `webhook-timestamp`: integer seconds of this attempt (receivers refuse old ones, so a
    retry hours later is signed afresh);
  * `webhook-signature`: `v1,` + base64 HMAC-SHA256 over `id.timestamp.body`, keyed with the
    base64 bytes after the `whsec_` prefix.
The webhook record holds the *name* of an environment variable; its value is read here at each
attempt and never stored, logged or returned. A missing or malformed secret fails that attempt
with a reason saying which.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Mapping
from typing import Any, Final

import orjson

from maia.core import format_timestamp_ms

SECRET_PREFIX: Final = "whsec_"
MIN_SECRET_BYTES: Final = 24  # Standard Webhooks: 24..64 random bytes
MAX_SECRET_BYTES: Final = 64


class SecretUnavailable(ValueError):
    """The secret could not be read; `reason` is secret_missing or secret_malformed."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def read_secret(environ: Mapping[str, str], name: str) -> bytes:
    """The key bytes of the `whsec_` secret in environment variable `name`.

    Raises SecretUnavailable naming the variable (never its value).
    """
    value = environ.get(name)
    if not value:
        raise SecretUnavailable("secret_missing", f"environment variable {name} is not set")
    if not value.startswith(SECRET_PREFIX):
        raise SecretUnavailable(
            "secret_malformed", f"environment variable {name} does not hold a whsec_ secret"
        )
    try:
        key = base64.b64decode(value[len(SECRET_PREFIX) :], validate=True)
    except (binascii.Error, ValueError):
        raise SecretUnavailable(
            "secret_malformed", f"environment variable {name}: the part after whsec_ is not base64"
        ) from None
    if not MIN_SECRET_BYTES <= len(key) <= MAX_SECRET_BYTES:
        raise SecretUnavailable(
            "secret_malformed",
            f"environment variable {name}: the secret must be "
            f"{MIN_SECRET_BYTES}-{MAX_SECRET_BYTES} bytes, not {len(key)}",
        )
    return key


def delivery_body(event_type: str, occurred_ms: int, data: Any) -> bytes:
    """The body of a delivery: `{type, timestamp, data}` (timestamp: when the event happened)."""
    return orjson.dumps(
        {"type": event_type, "timestamp": format_timestamp_ms(occurred_ms), "data": data}
    )


def signature(key: bytes, message_id: str, timestamp_s: int, body: bytes) -> str:
    """`v1,<base64 HMAC-SHA256 over id.timestamp.body>`."""
    signed = f"{message_id}.{timestamp_s}.".encode() + body
    digest = hmac.new(key, signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode("ascii")


def signed_headers(
    key: bytes, message_id: str, now_ms: int, body: bytes
) -> tuple[tuple[str, str], ...]:
    """The three Standard Webhooks headers for one attempt at wall time `now_ms`."""
    timestamp_s = now_ms // 1000
    return (
        ("webhook-id", message_id),
        ("webhook-timestamp", str(timestamp_s)),
        ("webhook-signature", signature(key, message_id, timestamp_s, body)),
    )
