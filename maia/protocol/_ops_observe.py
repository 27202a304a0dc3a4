"""observe.events: the subscribe request of `/api/v1/observations` and the frames it streams.

The query is the spec's ObservationQueryV1, the records ObservationRecordV1 and the
watermark ObservationWatermarkV1 (spec: Events, traces, and cursors). Like every connection,
the observation socket starts with `node.hello`; the subscribe request follows it.
`maia.observe` re-exports the query classes and builds the frames.
"""

# ruff: noqa: RUF009  (field() returns attrs.field: a field definition, not a shared default)

from __future__ import annotations

from typing import Final, Literal

import attrs

from maia.core import WIRE_ID_MAX_LENGTH, WIRE_ID_PATTERN, digest_json, field, spec, to_json
from maia.core._limits import MAX_CURSOR_LENGTH, STREAM_BATCH_MAX_RECORDS

from ._common import count_field, digest_field, id_field, operation, timestamp_field
from ._registry import SCHEMA_BASE, StreamDescriptor

Domain = Literal[
    "agent", "swarm", "node", "provider", "voice", "a2a", "security", "storage", "scheduler"
]
Importance = Literal["authoritative", "diagnostic"]
Classification = Literal["public", "operator", "project", "sensitive"]

DOMAINS: Final = Domain.__args__  # type: ignore[attr-defined]
SNAPSHOT_LIMIT_DEFAULT: Final = 64
SNAPSHOT_LIMIT_MAX: Final = 1000
_ID = spec(min_length=1, max_length=WIRE_ID_MAX_LENGTH, pattern=WIRE_ID_PATTERN)
_TYPE = spec(min_length=1, max_length=64, pattern=r"^[a-z][a-z0-9_.-]*$")


@attrs.frozen
class ObservationQuery:
    """Which records a subscriber wants (ObservationQueryV1); empty lists mean all."""

    domains: tuple[Domain, ...] = field(doc="Domains (empty: all).", factory=tuple, max_items=9)
    importance: tuple[Importance, ...] = field(
        doc="authoritative (journal events) and/or diagnostic (live deltas); empty: both.",
        factory=tuple,
        max_items=2,
    )
    project_ids: tuple[str, ...] = field(
        doc="Only these Projects (empty: all).", factory=tuple, max_items=64, items=_ID
    )
    session_ids: tuple[str, ...] = field(
        doc="Only these Sessions (empty: all).", factory=tuple, max_items=256, items=_ID
    )
    event_types: tuple[str, ...] = field(
        doc="Only these event types (empty: all).", factory=tuple, max_items=64, items=_TYPE
    )
    classifications: tuple[Classification, ...] = field(
        doc="Only these classifications (empty: all).", factory=tuple, max_items=4
    )
    include_content: bool = field(
        doc="Include text content in payloads (else redacted).", default=False
    )
    limit: int = field(
        doc="Records in the snapshot.",
        default=SNAPSHOT_LIMIT_DEFAULT,
        minimum=0,
        maximum=SNAPSHOT_LIMIT_MAX,
    )

    def digest(self) -> str:
        """The resolved filter digest (sha256 of the canonical query, limit left out)."""
        body = to_json(self)
        body.pop("limit", None)
        return digest_json(body)


@attrs.frozen
class ObserveInput:
    """The subscribe request of the observation stream (`observe.events`)."""

    query: ObservationQuery = field(doc="What to observe.", factory=ObservationQuery)
    cursor: str | None = field(
        doc="Resume after this cursor (from a previous frame).",
        default=None,
        min_length=1,
        max_length=MAX_CURSOR_LENGTH,
    )


@attrs.frozen
class PartitionSequence:
    """How far one journal partition is covered."""

    partition_id: int = count_field("The partition (a single Node has partition 0).")
    sequence: int = count_field("Journal position covered.")


@attrs.frozen
class ObservationWatermark:
    """ObservationWatermarkV1: what a frame covers."""

    topology_revision: int = field(doc="Topology revision.", minimum=1)
    partition_sequences: tuple[PartitionSequence, ...] = field(doc="Per partition.", max_items=64)
    evidence_projected_through: tuple[PartitionSequence, ...] = field(
        doc="Evidence projected through, per partition.", max_items=64
    )
    coverage: Literal["complete", "degraded"] = field(doc="degraded after a gap.")


@attrs.frozen
class ObservationRecord:
    """ObservationRecordV1: a journal event (authoritative) or a live item (diagnostic)."""

    schema_version: Literal["maia.observation.v1"] = field(doc="Record schema.")
    observation_id: str = id_field("The event ID (the same on replay), or item.number.")
    domain: Domain = field(doc="Observation domain.")
    importance: Importance = field(doc="authoritative or diagnostic.")
    event_type: str = field(doc="What happened.", min_length=1, max_length=64)
    node_id: str = id_field("The Node.")
    node_epoch: int = field(doc="Node epoch.", minimum=1)
    partition_id: int = count_field("Partition (0).")
    partition_sequence: int = count_field("Journal position.")
    owner_type: str = field(doc="Owning aggregate type.", min_length=1, max_length=64)
    owner_id: str = id_field("Owning aggregate.")
    owner_sequence: int | None = field(doc="Owner sequence (durable records).", minimum=1)
    project_id: str | None = id_field("Project.")
    session_id: str | None = id_field("Session.")
    activation_id: str | None = id_field("Activation.")
    attempt_id: str | None = id_field("Attempt.")
    effect_id: str | None = id_field("Effect.")
    command_id: str | None = id_field("Command.")
    receipt_id: str | None = id_field("Receipt.")
    connection_id: str | None = id_field("Connection.")
    causation_id: str | None = id_field("What caused it.")
    correlation_id: str | None = id_field("Correlation.")
    classification: Classification = field(doc="Who may see it.")
    occurred_at: str = timestamp_field("When it happened.")
    observed_at: str = timestamp_field("When the Node observed it.")
    schema_ref: str = field(doc="Payload schema.", min_length=1, max_length=256)
    payload_disposition: Literal["inline", "redacted"] = field(doc="inline or redacted.")
    payload: object = field(doc="Event-specific data (null when redacted).", opaque="payload")
    artifact_ref: str | None = field(doc="Artifact holding the payload.", max_length=1024)
    coalesced_record_count: int = count_field("Records this one stands for, beyond itself.")
    dropped_record_count_before: int = count_field("Records dropped just before it.")


@attrs.frozen
class SnapshotFrame:
    """A snapshot part (the first frames, or after a reset); the final one carries cursor."""

    type: Literal["snapshot"] = field(doc="snapshot")
    records: tuple[ObservationRecord, ...] = field(
        doc="Up to 64 records.", max_items=STREAM_BATCH_MAX_RECORDS
    )
    resolved_filter_digest: str = digest_field("Digest of the query (limit left out).")
    watermark: ObservationWatermark = field(doc="What the snapshot covers.")
    generated_at: str = timestamp_field("When the snapshot was taken.")
    truncated: bool = field(doc="Whether the limit cut older records off.")
    final: bool = field(doc="The snapshot's last frame.")
    cursor: str | None = field(
        doc="Resume from here (final frame).", default=None, max_length=MAX_CURSOR_LENGTH
    )


@attrs.frozen
class EventBatchFrame:
    """ObservationBatchV1: replayed or live records."""

    type: Literal["event"] = field(doc="event")
    records: tuple[ObservationRecord, ...] = field(
        doc="1-64 records.", min_items=1, max_items=STREAM_BATCH_MAX_RECORDS
    )
    resolved_filter_digest: str = digest_field("Digest of the query.")
    watermark: ObservationWatermark = field(doc="What is covered.")
    coalesced_record_count: int = count_field("Live records coalesced since the last frame.")
    dropped_record_count: int = count_field("Records dropped.")
    heartbeat: bool = field(doc="false in a batch.")
    cursor: str = field(doc="Resume from here.", min_length=1, max_length=MAX_CURSOR_LENGTH)


@attrs.frozen
class ObservationHeartbeatFrame:
    """Nothing new matched; the stream is alive, and the cursor moves on."""

    type: Literal["heartbeat"] = field(doc="heartbeat")
    records: tuple[ObservationRecord, ...] = field(doc="Always empty.", max_items=0)
    resolved_filter_digest: str = digest_field("Digest of the query.")
    watermark: ObservationWatermark = field(doc="What is covered.")
    coalesced_record_count: int = count_field("0")
    dropped_record_count: int = count_field("0")
    heartbeat: bool = field(doc="true in a heartbeat.")
    cursor: str = field(doc="Resume from here.", min_length=1, max_length=MAX_CURSOR_LENGTH)


@attrs.frozen
class GapFrame:
    """Terminal: the subscriber fell behind; resume with cursor on a new connection."""

    type: Literal["gap"] = field(doc="gap")
    reason: str = field(doc="Why.", min_length=1, max_length=256)
    coalesced_record_count: int = count_field("Records coalesced.")
    dropped_record_count: int = count_field("Records dropped.")
    watermark: ObservationWatermark = field(doc="Degraded coverage.")
    cursor: str = field(doc="Resume from here.", min_length=1, max_length=MAX_CURSOR_LENGTH)


@attrs.frozen
class SnapshotDescriptor:
    """A fresh snapshot's descriptor (in a reset frame)."""

    resolved_filter_digest: str = digest_field("Digest of the query.")
    watermark: ObservationWatermark = field(doc="What it covers.")
    generated_at: str = timestamp_field("When it was taken.")
    truncated: bool = field(doc="Whether the limit cut older records off.")


@attrs.frozen
class ResetFrame:
    """The cursor can no longer be served: a fresh snapshot follows on this connection."""

    type: Literal["reset"] = field(doc="reset")
    error: object = field(doc="The cursor_reset_required error.", opaque="error")
    snapshot: SnapshotDescriptor = field(doc="The snapshot that follows.")


@attrs.frozen
class SummaryFrame:
    """Once, between the start (snapshot or replay) and the live batches: what the start
    carried, the journal's retained range, and the cursor at the live edge."""

    type: Literal["summary"] = field(doc="summary")
    mode: Literal["snapshot", "replay", "reset"] = field(
        doc="How the stream started (reset: a reset frame, then a snapshot)."
    )
    record_count: int = count_field("Records the start carried.")
    event_type_counts: dict[str, int] = field(
        doc="Those records by event type (at most 64 types; the rest as other).",
        max_items=65,
    )
    oldest_retained_position: int = field(doc="First journal position kept.", minimum=1)
    head_position: int = count_field("Last journal position written.")
    resolved_filter_digest: str = digest_field("Digest of the query.")
    watermark: ObservationWatermark = field(doc="What the client has now.")
    cursor: str = field(doc="Resume from here.", min_length=1, max_length=MAX_CURSOR_LENGTH)


@attrs.frozen
class ObserveOutput:
    """One frame of the observation stream (a gap or an error ends it)."""

    frame: (
        SnapshotFrame | EventBatchFrame | ObservationHeartbeatFrame | GapFrame | ResetFrame
        | SummaryFrame
    ) = field(doc="The frame.")  # fmt: skip


OBSERVE_OPERATIONS = (
    operation(
        operation_id="observe.events",
        agent_exposure="unsupported",
        summary="Follow the Node's observations: a snapshot or a replay, then live batches.",
        input_type=ObserveInput,
        output_type=ObserveOutput,
        errors=("invalid_cursor", "cursor_reset_required", "frame_too_large", "hello_required"),
        stream=StreamDescriptor(
            mode="snapshot-then-events",
            cursor_schema_ref=f"{SCHEMA_BASE}:observation-cursor",
            reset_schema_ref=f"{SCHEMA_BASE}:observation-reset",
        ),
    ),
)
