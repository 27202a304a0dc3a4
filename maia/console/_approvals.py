"""The console's list of pending approvals, for completing approval IDs (`approval allow ID`).

Seeded by `approval.list --state pending` at start and kept by the live feed: an
`approval.requested` event adds one, any other `approval.*` event (allowed, denied, withdrawn,
expired) removes it. Bounded; a pending approval the list does not hold still works when its
exact ID is typed.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from ._cache import FeedEvent

MAX_PENDING_APPROVALS = 500
SUMMARY_SHOWN = 60  # characters of the summary shown beside a completion


@attrs.frozen
class PendingApproval:
    """What completion shows for one pending approval."""

    approval_id: str
    kind: str
    summary: str


class ApprovalCache:
    """Pending approval IDs with their kind and the start of their summary."""

    def __init__(self, limit: int = MAX_PENDING_APPROVALS) -> None:
        self._limit = limit
        self._pending: OrderedDict[str, PendingApproval] = OrderedDict()

    def __len__(self) -> int:
        return len(self._pending)

    def seed(self, approvals: Iterable[Mapping[str, Any]]) -> None:
        """Add the pending ones of approvals in `approval.list`'s wire form."""
        for wire in approvals:
            if wire.get("state", "pending") == "pending":
                self._put(wire)

    def apply(self, event: FeedEvent) -> bool:
        """Take an approval event into account; True when the list changed."""
        if event.event_type == "approval.requested":
            return self._put(event.payload)
        if event.event_type.startswith("approval."):
            return self._pending.pop(str(event.payload.get("approvalId")), None) is not None
        return False

    def matches(self, prefix: str) -> list[PendingApproval]:
        """The pending approvals whose ID starts with `prefix`, oldest first."""
        return [a for a in self._pending.values() if a.approval_id.startswith(prefix)]

    def _put(self, wire: Mapping[str, Any]) -> bool:
        approval_id, kind = wire.get("approvalId"), wire.get("kind")
        if not (isinstance(approval_id, str) and isinstance(kind, str)):
            return False
        summary = wire.get("summary")
        text = summary[:SUMMARY_SHOWN] if isinstance(summary, str) else ""
        self._pending[approval_id] = PendingApproval(approval_id, kind, text)
        while len(self._pending) > self._limit:
            self._pending.popitem(last=False)
        return True
