"""The Execution Node's durable lease state: `<home>/machine-leases.json`, written 0600.

Per assignment: the lease epoch, the phase, the applied (epoch, sequence) pair and its
requestId, the revocation high-water mark and the spool's counters; what
`supervision.leases.node_restarted` needs after a restart (spec MN0 item 5: readings taken
before are void, a running execution is swept and reported stopped).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import orjson

from maia.node import write_private_file
from supervision.leases import EvidenceSpool, NodeLeaseState, NodePhase
from supervision.leases._evolve import evolve

FILE_NAME: Final = "machine-leases.json"


def _wire(state: NodeLeaseState) -> dict[str, Any]:
    return {
        "nodeId": state.node_id, "boot": state.boot, "leaseEpoch": state.lease_epoch,
        "phase": state.phase.value,
        "appliedPair": list(state.applied_pair) if state.applied_pair else None,
        "appliedRequestId": state.applied_request_id,
        "revocationHighWater": state.revocation_high_water,
        "spoolLast": state.spool.last_sequence,
        "spoolAcknowledged": state.spool.acknowledged_through,
    }  # fmt: skip


def save_states(home: Path, states: dict[str, NodeLeaseState]) -> None:
    data = {key: _wire(state) for key, state in states.items()}
    write_private_file(home / FILE_NAME, orjson.dumps(data))


def previous_boots(home: Path) -> dict[str, str]:
    """Each assignment's boot token of the run that wrote the file (a trace's run id)."""
    try:
        data = orjson.loads((home / FILE_NAME).read_bytes())
    except FileNotFoundError:
        return {}
    return {key: str(wire["boot"]) for key, wire in data.items() if wire.get("boot")}


def load_states(home: Path, boot: str, now_ms: int) -> dict[str, NodeLeaseState]:
    """The states a previous run left (empty when none). A damaged file is refused loudly:
    the administrator removes it with the credential (docs/machines.md, restore)."""
    try:
        data = orjson.loads((home / FILE_NAME).read_bytes())
    except FileNotFoundError:
        return {}
    states = {}
    for assignment_id, wire in data.items():
        source = f"{wire['nodeId']}.{assignment_id}"
        last, acked = int(wire["spoolLast"]), int(wire["spoolAcknowledged"])
        # Records after the acknowledgement were held in memory only: counted as retained
        # with their size unknown (1 byte each), so the next status still shows the gap.
        records = tuple((seq, 1, now_ms) for seq in range(acked + 1, last + 1))
        spool = EvidenceSpool(source, last, acked, acked, records, len(records))
        pair = wire["appliedPair"]
        state = NodeLeaseState(node_id=wire["nodeId"], assignment_id=assignment_id, boot=boot)
        states[assignment_id] = evolve(
            state, lease_epoch=int(wire["leaseEpoch"]), phase=NodePhase(wire["phase"]),
            applied_pair=tuple(pair) if pair else None,
            applied_request_id=wire["appliedRequestId"],
            revocation_high_water=int(wire["revocationHighWater"]), spool=spool,
        )  # fmt: skip
    return states
