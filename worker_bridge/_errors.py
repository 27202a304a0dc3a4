"""Protocol errors, split by who is at fault (the h11 split).

A `RemoteProtocolError` means the peer broke the protocol: the supervisor fences the worker,
the worker gives up on the Node. A `LocalProtocolError` means we tried to send something the
protocol forbids: that is our bug and should crash loudly. Either moves the connection to
ERROR. This layer imports nothing of Maia's, so it has its own small error types; the
supervisor maps them to `MaiaError` codes at its edge.
"""

from __future__ import annotations


class ProtocolError(Exception):
    """A worker-protocol failure. `frame` and `field` name where it was found (may be empty)."""

    def __init__(self, message: str, *, frame: str = "", field: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.frame = frame
        self.field = field


class RemoteProtocolError(ProtocolError):
    """The peer sent bytes or a frame the protocol refuses."""


class LocalProtocolError(ProtocolError):
    """We tried to send a frame the protocol refuses (our bug)."""
