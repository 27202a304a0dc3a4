"""Node operations: node.hello (the handshake every connection starts with) and node.status."""

# ruff: noqa: RUF009  (field() returns attrs.field: a field definition, not a shared default)

from __future__ import annotations

from typing import Literal

import attrs

from maia.core._fields import field, spec

from ._common import Empty, count_field, digest_field, id_field, operation, timestamp_field
from ._config_status import ConfigScopeStatus

VERSION_TEXT = spec(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9][A-Za-z0-9._/+-]*$")


@attrs.frozen
class NodeHelloInput:
    """The client's protocol version and, when it has one, the registry digest it was built on."""

    protocol: str = field(
        doc="Client protocol, e.g. maia.protocol/v1alpha1.", min_length=1, max_length=64
    )
    registry_digest: str | None = digest_field(
        "Registry digest the client was built on.", default=None
    )
    client_name: str | None = field(
        doc="Client program name.", default=None, min_length=1, max_length=64
    )
    client_version: str | None = field(
        doc="Client version.", default=None, min_length=1, max_length=64
    )


@attrs.frozen
class NodeHelloOutput:
    """Who answered: the Node's identity, epoch, protocol, registry and capabilities."""

    node_id: str = id_field("The Node's ID.")
    epoch: int = field(doc="Node epoch: grows by one at every start.", minimum=1)
    protocol: str = field(doc="The Node's protocol version.", min_length=1, max_length=64)
    registry_digest: str = digest_field("The Node's registry digest.")
    version: str = field(doc="The Node's software version.", min_length=1, max_length=64)
    capabilities: tuple[str, ...] = field(
        doc="Capability names.", max_items=64, items=spec(min_length=1, max_length=64)
    )
    registry_match: bool = field(doc="Whether the client's registry digest equals the Node's.")


@attrs.frozen
class StorageEvents:
    """Journal retention counters (present when the Node reports retention)."""

    excess_bytes: int = count_field("Bytes over the retention budget.")
    oldest_age_ms: int = count_field("Age of the oldest retained event.")
    checkpoint_blocked: bool = field(doc="Whether a reader blocks the WAL checkpoint.")


@attrs.frozen
class StorageStatus:
    """Storage health. ok: the connection is open (not that an integrity check passed)."""

    integrity: Literal["ok", "unavailable"] = field(doc="ok or unavailable.")
    schema_version: int = count_field("PRAGMA user_version of the database.")
    events: StorageEvents | None = field(doc="Retention counters.", default=None)


@attrs.frozen
class MailboxDepth:
    """One actor mailbox: how full it is."""

    name: str = field(doc="Mailbox owner.", min_length=1, max_length=128)
    depth: int = count_field("Messages waiting.")
    capacity: int = count_field("Bound.")


@attrs.frozen
class NodeStatusOutput:
    """The Node's identity, uptime, storage, Sessions by state, workers, queues, mailboxes."""

    node_id: str = id_field("The Node's ID.")
    epoch: int = field(doc="Node epoch.", minimum=1)
    version: str = field(doc="Software version.", min_length=1, max_length=64)
    protocol: str = field(doc="Protocol version.", min_length=1, max_length=64)
    registry_digest: str = digest_field("Registry digest.")
    started_at: str = timestamp_field("When this epoch started.")
    uptime_ms: int = count_field("Milliseconds since start (monotonic).")
    storage: StorageStatus = field(doc="Storage health.")
    sessions_by_state: dict[str, int] = field(
        doc="Session count per state (absent: zero).",
        max_items=16,
        keys=spec(min_length=1, max_length=32),
        items=spec(minimum=0),
    )
    live_workers: int = count_field("Worker processes running.")
    queued_turns: int = count_field("Turns waiting in Session queues.")
    mailboxes: tuple[MailboxDepth, ...] = field(
        doc="Mailbox depths of the busiest actors.", max_items=64
    )
    capabilities: tuple[str, ...] = field(
        doc="Capability names.", max_items=64, items=spec(min_length=1, max_length=64)
    )
    config_files: tuple[ConfigScopeStatus, ...] = field(
        doc="Configuration files that are not what is admitted (differs: edited since, "
        "invalid, or never-admitted): none of them is in effect until it is admitted. "
        "The user file first, then Projects; at most 64, each with its first problems.",
        factory=tuple,
        max_items=64,
    )


NODE_OPERATIONS = (
    operation(
        operation_id="node.hello",
        agent_exposure="unsupported",
        summary="Start a connection: check the protocol and learn who the Node is.",
        input_type=NodeHelloInput,
        output_type=NodeHelloOutput,
        owner="protocol",
        errors=("protocol_incompatible", "hello_required"),
        callers=frozenset({"local-user", "session", "machine"}),
    ),
    operation(
        operation_id="node.status",
        agent_exposure="eligible",
        summary="The Node's health, identity and load.",
        input_type=Empty,
        output_type=NodeStatusOutput,
        errors=(),
    ),
)
