"""node.status in wire form, built again only when what it says has changed.

Polled by many clients, node.status mostly repeats itself: between two reads of the shared
counts (`_status_counts`, at most 250 ms old) only its uptime moves, and the mailbox depths
and live workers when work comes and goes. Building the answer (about twenty attrs
instances) and encoding it cost more than the rest of the request together, so the last
answer is kept in wire form with what it was built from, compared by value: the node's
identity, the counts, the configuration files' state, the mailbox rows and the live
workers. When all are equal the kept dict is copied with the current `uptimeMs` (in its
place: the bytes are those a fresh build gives, which a test checks); otherwise it is
built and encoded as before (`encode_output`, the op's own output class).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import attrs

from ._dispatch import Encoded
from ._ops import REGISTRY, NodeStatusOutput, OperationDescriptor, encode_output

_found = REGISTRY.get("node.status")
assert _found is not None
_STATUS: OperationDescriptor = _found
MailboxRow = tuple[int, str, int]  # (-depth, name, capacity)


@attrs.define
class StatusWire:
    """The last node.status answer (wire form, without its uptime) and its inputs."""

    _inputs: tuple[Any, ...] | None = None
    _wire: dict[str, Any] | None = None

    def answer(
        self,
        inputs: tuple[Any, ...],
        build: Callable[[], NodeStatusOutput],
        uptime_ms: int,
    ) -> Encoded:
        """The answer for `inputs` (everything `build` reads but the uptime), encoded."""
        wire = self._wire
        if wire is None or inputs != self._inputs:
            wire = encode_output(_STATUS, build())
            self._inputs, self._wire = inputs, wire
        answer = dict(wire)
        answer["uptimeMs"] = uptime_ms
        return Encoded(answer)


def sorted_rows(rows: Sequence[MailboxRow], limit: int) -> tuple[MailboxRow, ...]:
    """The mailbox rows deepest first, then by name (ties keep their order), at most `limit`."""
    return tuple(sorted(rows, key=_depth_then_name)[:limit])


def _depth_then_name(row: MailboxRow) -> tuple[int, str]:
    return row[0], row[1]
