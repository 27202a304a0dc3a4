"""The wire shape of a machine row (and its live link, for machine.show)."""

from __future__ import annotations

from typing import Any

from actors.machine import LinkState, MachineRecord
from maia.core import format_timestamp_ms


def _at(ms: int | None) -> str | None:
    return None if ms is None else format_timestamp_ms(ms)


def machine_wire(record: MachineRecord, *, link: LinkState | None = None,
                 now_mono_ms: int | None = None,
                 barrier: bool = True) -> dict[str, Any]:  # fmt: skip
    """A `Machine` as JSON; `link` only when `now_mono_ms` is given (machine.show), with
    `barrier` (whether a placement barrier stands on any of its assignments) when no link
    is open (an open link carries its own)."""
    wire: dict[str, Any] = {
        "machineId": record.machine_id, "name": record.name, "state": record.state.value,
        "incarnation": record.incarnation, "revocationRevision": record.revocation_revision,
        "recoveryRequired": record.recovery_required, "revision": record.revision,
        "createdAt": format_timestamp_ms(record.created_ms),
        "updatedAt": format_timestamp_ms(record.updated_ms),
    }  # fmt: skip
    for key, value in (("tokenExpiresAt", _at(record.token_expires_ms)),
                       ("executionNodeId", record.execution_node_id),
                       ("enrolledAt", _at(record.enrolled_ms)),
                       ("lastSeenAt", _at(record.last_seen_ms))):  # fmt: skip
        if value is not None:
            wire[key] = value
    if now_mono_ms is not None:
        wire["link"] = _link(link, now_mono_ms, barrier)
    return wire


def _link(link: LinkState | None, now_mono_ms: int, barrier: bool) -> dict[str, Any]:
    if link is None:  # the barrier said, not left to the field's default (true)
        return {"connected": False, "heartbeats": 0, "lastReportSequence": 0,
                "barrier": barrier}  # fmt: skip
    wire: dict[str, Any] = {
        "connected": True,
        "heartbeats": link.heartbeats,
        "lastReportSequence": link.last_report_sequence,
        "barrier": link.barrier,
        "refusedFrames": link.refused_frames,
    }
    if link.last_heartbeat_ms is not None:
        wire["lastHeartbeatAgeMs"] = max(0, now_mono_ms - link.last_heartbeat_ms)
    return wire
