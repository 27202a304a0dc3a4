"""Shaping what the hub carries into the wire records of both streams.

Two kinds of entries travel through the hub: committed journal events (`EventRecord`, the
authoritative records) and live item records (`LiveItem`: `item.started` and `item.delta`,
ephemeral, never stored per delta). An `Entry` wraps either and caches its encoded
ObservationRecordV1 (with and without content), so fifty subscribers encode a record once.

A journal event's record carries the event's envelope: causationId and correlationId always,
attemptId, activationId and commandId where the event has them. Fields a single Node has no
value for are null (effectId, receiptId, connectionId, artifactRef); partitionId is always 0 and
partitionSequence is the journal position; observationId is the event ID (the same on
replay); observedAt equals occurredAt (the Node observes its own journal as it commits).
"""

from __future__ import annotations

from typing import Any, Final, Literal

import attrs
import orjson

from maia.core import format_timestamp_ms
from storage import EventRecord

from ._query import domain_of

OBSERVATION_SCHEMA: Final = "maia.observation.v1"
PARTITION: Final = 0
TOPOLOGY_REVISION: Final = 1
MAX_INLINE_PAYLOAD_BYTES: Final = 64 * 1024  # larger payloads are redacted: read events.read
CONTENT_KEYS: Final = frozenset({"text", "input", "content", "summary", "prompt"})
TERMINAL_TURN_EVENTS: Final = frozenset({"turn.completed", "turn.failed", "turn.interrupted"})
DIAGNOSTIC_EVENT: Final = "worker.diagnostic"  # a worker's diagnostic record (live only)
DIAGNOSTICS_GAP_EVENT: Final = "worker.diagnostics.gap"  # the journal's record of a drop


@attrs.define(eq=False)
class LiveItem:
    """A live item record: published by the Session actor, delivered, never stored."""

    record: Literal["item.started", "item.delta"]
    session_id: str
    turn_id: str
    item_id: str
    kind: str
    text: str
    occurred_ms: int
    project_id: str | None = None
    position: int = 0  # the journal position it follows (set when the hub releases it)
    number: int = 0  # per item: 0 for item.started, then 1, 2, ... per delta
    coalesced: int = 1  # how many published records this one stands for


@attrs.define(eq=False)
class DiagnosticItem:
    """One record of a worker's observation-batch: delivered live, never stored."""

    attempt_id: str
    session_id: str | None
    turn_id: str | None
    record: dict[str, Any]
    occurred_ms: int
    number: int  # per attempt, from 1
    project_id: str | None = None
    position: int = 0  # the journal position it follows
    dropped_before: int = 0  # records the worker dropped just before it
    causation_id: str | None = None  # the turn's dispatch, when the hub saw it
    correlation_id: str | None = None
    activation_id: str | None = None


class Entry:
    """One record as subscribers share it, with its encodings cached."""

    __slots__ = ("_encoded", "diagnostic", "event", "live")

    def __init__(self, event: EventRecord | None = None, live: LiveItem | None = None,
                 diagnostic: DiagnosticItem | None = None) -> None:  # fmt: skip
        self.event = event
        self.live = live
        self.diagnostic = diagnostic
        self._encoded: dict[tuple[bool, int, int], bytes] = {}

    @property
    def durable(self) -> bool:
        return self.event is not None

    def observation(
        self, *, node_id: str, epoch: int, include_content: bool, dropped_before: int = 0
    ) -> bytes:
        """This entry as an encoded ObservationRecordV1."""
        key = (include_content, epoch, dropped_before)
        cached = self._encoded.get(key)
        if cached is None:
            if self.event is not None:
                body = _event_record(self.event, node_id, epoch, include_content)
            elif self.diagnostic is not None:
                body = _diagnostic_record(self.diagnostic, node_id, epoch, include_content)
                dropped_before = max(dropped_before, self.diagnostic.dropped_before)
            else:
                assert self.live is not None
                body = _live_record(self.live, node_id, epoch, include_content)
            body["droppedRecordCountBefore"] = dropped_before
            cached = orjson.dumps(body)
            if len(self._encoded) < 4:
                self._encoded[key] = cached
        return cached


def _payload(payload: Any, include_content: bool) -> tuple[Any, str]:
    disposition = "inline"
    if not include_content and isinstance(payload, dict) and CONTENT_KEYS & payload.keys():
        payload = {k: v for k, v in payload.items() if k not in CONTENT_KEYS}
        disposition = "redacted"
    if len(orjson.dumps(payload)) > MAX_INLINE_PAYLOAD_BYTES:
        return None, "redacted"
    return payload, disposition


def _event_record(
    event: EventRecord, node_id: str, epoch: int, include_content: bool
) -> dict[str, Any]:
    payload, disposition = _payload(event.payload, include_content)
    attempt = event.attempt_id
    if attempt is None and isinstance(event.payload, dict):  # rows from before the envelope
        named = event.payload.get("attemptId")
        attempt = named if isinstance(named, str) else None
    at = format_timestamp_ms(event.occurred_ms)
    return {
        "schemaVersion": OBSERVATION_SCHEMA,
        "observationId": event.event_id,
        "domain": domain_of(event.event_type),
        "importance": "authoritative",
        "eventType": event.event_type,
        "nodeId": node_id,
        "nodeEpoch": epoch,
        "partitionId": PARTITION,
        "partitionSequence": event.position,
        "ownerType": event.owner_type,
        "ownerId": event.owner_id,
        "ownerSequence": event.owner_sequence,
        "projectId": event.project_id,
        "sessionId": event.session_id,
        "activationId": event.activation_id,
        "attemptId": attempt,
        "effectId": None,
        "commandId": event.command_id,
        "receiptId": None,
        "connectionId": None,
        "causationId": event.causation_id,
        "correlationId": event.correlation_id,
        "classification": event.classification,
        "occurredAt": at,
        "observedAt": at,
        "schemaRef": f"maia.event.v1#{event.event_type}",
        "payloadDisposition": disposition,
        "payload": payload,
        "artifactRef": None,
        "coalescedRecordCount": 0,
    }


def _live_record(live: LiveItem, node_id: str, epoch: int, include_content: bool) -> dict[str, Any]:
    body: dict[str, Any] = {"turnId": live.turn_id, "itemId": live.item_id, "kind": live.kind}
    disposition = "inline"
    if live.record == "item.delta":
        if include_content:
            body["text"] = live.text
        else:
            disposition = "redacted"
    at = format_timestamp_ms(live.occurred_ms)
    return {
        "schemaVersion": OBSERVATION_SCHEMA,
        "observationId": f"{live.item_id}.{live.number}",
        "domain": "agent",
        "importance": "diagnostic",
        "eventType": live.record,
        "nodeId": node_id,
        "nodeEpoch": epoch,
        "partitionId": PARTITION,
        "partitionSequence": live.position,
        "ownerType": "session",
        "ownerId": live.session_id,
        "ownerSequence": None,
        "projectId": live.project_id,
        "sessionId": live.session_id,
        "activationId": None,
        "attemptId": None,
        "effectId": None,
        "commandId": None,
        "receiptId": None,
        "connectionId": None,
        "causationId": live.turn_id,
        "correlationId": live.session_id,
        "classification": "operator",
        "occurredAt": at,
        "observedAt": at,
        "schemaRef": f"maia.session-stream.v1#{live.record}",
        "payloadDisposition": disposition,
        "payload": body,
        "artifactRef": None,
        "coalescedRecordCount": live.coalesced - 1,
    }


def _diagnostic_record(
    item: DiagnosticItem, node_id: str, epoch: int, include_content: bool
) -> dict[str, Any]:
    payload, disposition = _payload(item.record, include_content)
    at = format_timestamp_ms(item.occurred_ms)
    root = item.turn_id or item.attempt_id
    return {
        "schemaVersion": OBSERVATION_SCHEMA,
        "observationId": f"{item.attempt_id}.{item.number}",
        "domain": "agent",
        "importance": "diagnostic",
        "eventType": DIAGNOSTIC_EVENT,
        "nodeId": node_id,
        "nodeEpoch": epoch,
        "partitionId": PARTITION,
        "partitionSequence": item.position,
        "ownerType": "attempt",
        "ownerId": item.attempt_id,
        "ownerSequence": None,
        "projectId": item.project_id,
        "sessionId": item.session_id,
        "activationId": item.activation_id,
        "attemptId": item.attempt_id,
        "effectId": None,
        "commandId": None,
        "receiptId": None,
        "connectionId": None,
        "causationId": item.causation_id or root,
        "correlationId": item.correlation_id or item.session_id or item.attempt_id,
        "classification": "operator",
        "occurredAt": at,
        "observedAt": at,
        "schemaRef": f"maia.worker.v1#{DIAGNOSTIC_EVENT}",
        "payloadDisposition": disposition,
        "payload": payload,
        "artifactRef": None,
        "coalescedRecordCount": 0,
    }


def watermark(position: int, *, degraded: bool = False) -> dict[str, Any]:
    """ObservationWatermarkV1 of a single Node: one partition, the journal position."""
    vector = [{"partitionId": PARTITION, "sequence": position}]
    return {
        "topologyRevision": TOPOLOGY_REVISION,
        "partitionSequences": vector,
        "evidenceProjectedThrough": vector,
        "coverage": "degraded" if degraded else "complete",
    }


# -- session.attach records -----------------------------------------------------------------


def stream_record(event: EventRecord, epoch: int) -> dict[str, Any] | None:
    """The SessionStreamRecord of a journal event, or None for events the stream skips."""
    payload = event.payload if isinstance(event.payload, dict) else {}
    turn_id = payload.get("turnId")
    if not isinstance(turn_id, str):
        return None
    base: dict[str, Any] = {
        "sessionId": event.owner_id,
        "turnId": turn_id,
        "sequence": event.owner_sequence,
        "nodeEpoch": epoch,
    }
    match event.event_type:
        case "turn.started":
            return {"record": "turn.started", **base}
        case "item.completed":
            return {
                "record": "item.completed",
                **base,
                "itemId": payload.get("itemId"),
                "itemKind": payload.get("kind"),
                "text": payload.get("text"),
            }
        case kind if kind in TERMINAL_TURN_EVENTS:
            return {"record": "turn.completed", **base, "turnState": payload.get("state")}
    return None


def live_stream_record(live: LiveItem, sequence: int, epoch: int) -> dict[str, Any]:
    """The SessionStreamRecord of a live item record, at the stream's current sequence."""
    out: dict[str, Any] = {
        "record": live.record,
        "sessionId": live.session_id,
        "turnId": live.turn_id,
        "sequence": sequence,
        "nodeEpoch": epoch,
        "itemId": live.item_id,
        "itemKind": live.kind,
    }
    if live.record == "item.delta":
        out["text"] = live.text
    return out
