"""What both client transports share, standard library only (the error type loads when
an error is made): the message bound, the reason a cut connection gives, the Node
URL's parts, and a typed error from the wire's error object."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from maia.core import MaiaError

MAX_MESSAGE_BYTES: Final = 1024 * 1024
# Why a connection was closed by the SDK itself: a frame's write stopped part-way (its caller
# cancelled or interrupted, the socket timed out), and a later frame would land inside it.
CUT_REASON: Final = (
    "a send was cut off mid-frame (cancelled, interrupted or timed out), so the connection "
    "was closed"
)


def error_from_wire(value: Any) -> MaiaError:
    """A `MaiaError` from the wire's error object (an unknown code becomes internal_error)."""
    from maia.core import ERROR_CODES, MaiaError  # on failure only: a call that succeeds
    # (the CLI's one-call path) never imports the error table

    if not isinstance(value, dict):
        return MaiaError("internal_error", "the Node sent a malformed error", {"error": value})
    code, message = value.get("code"), value.get("message")
    raw_details = value.get("details")
    details: dict[str, Any] = raw_details if isinstance(raw_details, dict) else {}
    if not isinstance(code, str) or code not in ERROR_CODES:
        return MaiaError("internal_error", str(message), {**details, "nodeCode": code})
    return MaiaError(code, str(message), details)


def split_url(url: str) -> tuple[str, int, str]:
    """(host, port, path) of a `ws://` URL. Raises `MaiaError(configuration_invalid)`."""
    try:  # urlsplit and .port raise ValueError on a bad IPv6 literal or port
        parts = urlsplit(url)
        well_formed = parts.scheme == "ws" and bool(parts.hostname) and parts.port is not None
    except ValueError:
        well_formed = False
    if not well_formed:
        from maia.core import MaiaError

        raise MaiaError(
            "configuration_invalid",
            f"configuration is invalid: the Node URL {url!r} must look like "
            "ws://127.0.0.1:PORT/api/v1",
            {"url": url},
        )
    hostname, port = str(parts.hostname), int(parts.port or 0)
    host = f"[{hostname}]" if ":" in hostname else hostname
    return host, port, parts.path or "/"
