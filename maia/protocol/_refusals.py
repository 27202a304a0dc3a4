"""The request ID a frame refusal carries out of a parser, taken off its details.

A socket's parser (`maia.node._wire.parse_request`, `maia.observe._socket.parse_subscribe`)
refuses a frame by raising `MaiaError` before any op runs, with the frame's `id` in
`details["id"]` so the socket can answer in the same envelope. The envelope carries that id
(`{"id", "ok": false, "error"}`); the error object's `details` are the code's own fields
(`path` for validation_failed), so the socket takes the id off before it answers.
"""

from __future__ import annotations

from typing import Any

from maia.core import MaiaError


def take_request_id(error: MaiaError, default: Any = None) -> Any:
    """The refused frame's request ID (`default` when it had none), removed from
    `error.details`. Only for errors a frame parser raised: there `id` is never a field of
    the code's own (a resource error's `id` comes from an op, never from a parser)."""
    return error.details.pop("id", default)
