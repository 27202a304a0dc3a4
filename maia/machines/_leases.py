"""Control's side of the leases over the link: requests and reports reach the assignment
they name, or change nothing.

Every request or report naming an assignment this Control Node has not placed on that
machine (or another epoch) is refused (`refused` frame, reason `unknown`) and changes
nothing, as spec MN0 item 6 of the issue asks.
"""

from __future__ import annotations

from typing import Any

from actors.machine import LinkState, MachineRecord, MachineService
from maia.core import Clock
from storage import Storage
from supervision.leases import MachineLeaseRequest, NodeStatus

from ._frames import RefusedFrame


class LeaseDesk:
    """Routes lease requests and reports of authenticated links."""

    def __init__(self, store: Storage, machines: MachineService, clock: Clock) -> None:
        self._store = store
        self._machines = machines
        self._clock = clock

    async def on_status(self, record: MachineRecord, link: LinkState,
                        status: NodeStatus) -> list[Any]:  # fmt: skip
        """Reports about assignments this Node does not hold change nothing."""
        return []

    async def on_request(self, record: MachineRecord, link: LinkState,
                         request: MachineLeaseRequest) -> list[Any]:  # fmt: skip
        if request.node_id != record.machine_id:
            return [RefusedFrame("refused", request.request_id, "wrong_node")]
        return [RefusedFrame("refused", request.request_id, "unknown")]
