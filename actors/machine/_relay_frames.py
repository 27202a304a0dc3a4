"""The frames that relay a Session's worker over the machine link (the smallest MN2).

Control -> Execution Node: `launch_assignment` (run this assignment at this lease epoch),
`launch_worker` (spawn one worker attempt under it), `prompt`, `interrupt`, `stop_worker`,
`abandon` (a turn given up before the worker took it: fence and stop it at once), `ack`
(evidence written through this sequence). Execution Node -> Control: `worker` (an
attempt's phase: spawned, initialized, exited, refused) and `turn_event` (one evidence
record: per-source sequence from 1). Shapes on `maia.core`'s schema system: the link parses
each with the one strict decoder (`maia.machines._frames`) and refuses unknown fields.
"""

# ruff: noqa: RUF009  (field() returns attrs.field: a field definition, not a shared default)

from __future__ import annotations

from typing import Any, Literal

import attrs

from maia.core import field, id_field, spec
from supervision.leases import MachineAssignment, MachineLeaseGrant

_TEXT = 262_144
WorkerPhase = Literal["spawned", "initialized", "exited", "refused"]


def _count(doc: str, **kwargs: Any) -> Any:
    return field(doc=doc, minimum=0, **kwargs)


@attrs.frozen
class WireSpec:
    """A worker launch as the Execution Node receives it (argv[0] absolute, cwd a folder)."""

    argv: tuple[str, ...] = field(doc="The worker's argv.", min_items=1, max_items=64,
                                  items=spec(max_length=4096))  # fmt: skip
    cwd: str = field(doc="Its start directory.", max_length=4096)
    env: dict[str, str] = field(doc="The executor's allow-listed variables.", factory=dict)
    options: dict[str, str] = field(doc="The worker's options.", factory=dict)
    activation: dict[str, str] = field(doc="sessionId, conversationId.", factory=dict)


@attrs.frozen
class LaunchAssignmentFrame:
    type: Literal["launch_assignment"] = field(doc="launch_assignment.")
    assignment: MachineAssignment = field(doc="The exact assignment.")
    lease_epoch: int = field(doc="The epoch to run it at.", minimum=1)


@attrs.frozen
class LaunchWorkerFrame:
    type: Literal["launch_worker"] = field(doc="launch_worker.")
    assignment_id: str = id_field("The assignment it runs under.")
    lease_epoch: int = field(doc="The assignment's epoch.", minimum=1)
    attempt_id: str = id_field("The attempt, named by Control.")
    epoch: int = field(doc="The attempt's worker epoch, from Control's counter.", minimum=1)
    spec: WireSpec = field(doc="What to launch.")
    environment_digest: str = field(doc="sha256 of the spec's canonical JSON.", max_length=80)


@attrs.frozen
class PromptFrame:
    type: Literal["prompt"] = field(doc="prompt.")
    attempt_id: str = id_field("The attempt.")
    turn_id: str = id_field("The turn.")
    text: str = field(doc="The prompt.", max_length=_TEXT)


@attrs.frozen
class InterruptFrame:
    type: Literal["interrupt"] = field(doc="interrupt.")
    attempt_id: str = id_field("The attempt.")
    turn_id: str = id_field("The turn.")


@attrs.frozen
class StopWorkerFrame:
    type: Literal["stop_worker"] = field(doc="stop_worker.")
    attempt_id: str = id_field("The attempt.")
    reason: str = field(doc="Why.", max_length=256)


@attrs.frozen
class AbandonFrame:
    """The turn was given up at Control before any event of it came: the Execution Node
    never starts it (a prompt of it arriving later is dropped) and fences the worker, which
    stops at once without a graceful phase (`turn.interrupt` of a dispatching turn)."""

    type: Literal["abandon"] = field(doc="abandon.")
    attempt_id: str = id_field("The attempt.")
    turn_id: str = id_field("The turn given up.")
    reason: str = field(doc="Why (the fence reason).", max_length=256)


@attrs.frozen
class AckFrame:
    type: Literal["ack"] = field(doc="ack.")
    source_id: str = id_field("The evidence source.")
    through: int = _count("Cumulative: every record up to here is written at Control.")


@attrs.frozen
class GrantFrame:
    type: Literal["grant"] = field(doc="grant.")
    grant: MachineLeaseGrant = field(doc="The grant answering one request.")


@attrs.frozen
class RefusedFrame:
    type: Literal["refused"] = field(doc="refused.")
    request_id: str = id_field("The request refused.")
    reason: str = field(doc="Why.", max_length=64)


@attrs.frozen
class WorkerFrame:
    type: Literal["worker"] = field(doc="worker.")
    attempt_id: str = id_field("The attempt.")
    phase: WorkerPhase = field(doc="spawned, initialized, exited or refused.")
    pid: int | None = _count("The worker's pid on the Execution Node.", default=None)
    returncode: int | None = field(doc="Exit status.", default=None)
    signal: int | None = field(doc="The signal that ended it.", default=None)
    fence_reason: str | None = field(doc="Why it was fenced.", default=None, max_length=256)
    stop_phase: str | None = field(doc="exited, interrupt, terminate or kill.", default=None,
                                   max_length=32)  # fmt: skip
    stderr_tail: str | None = field(doc="The end of its stderr.", default=None, max_length=8192)
    reason: str | None = field(doc="Why it was refused.", default=None, max_length=256)
    sequence: int | None = _count("spawned: the admission's evidence record (per-source "
                                  "sequence), written at Control with the attempt.",
                                  default=None)  # fmt: skip


@attrs.frozen
class TurnEventFrame:
    type: Literal["turn_event"] = field(doc="turn_event.")
    attempt_id: str = id_field("The attempt.")
    turn_id: str = id_field("The turn.")
    kind: str = field(doc="started, delta, message, completed, failed, interrupted, lost.",
                      max_length=32)  # fmt: skip
    source_id: str = id_field("The evidence source (the assignment's spool).")
    sequence: int = field(doc="Per-source sequence, contiguous from 1.", minimum=1)
    text: str | None = field(doc="Its text.", default=None, max_length=_TEXT)
    data: dict[str, Any] | None = field(doc="Its data.", default=None)


RELAY_TO_EXECUTION: dict[str, type] = {
    "launch_assignment": LaunchAssignmentFrame, "launch_worker": LaunchWorkerFrame,
    "prompt": PromptFrame, "interrupt": InterruptFrame, "stop_worker": StopWorkerFrame,
    "abandon": AbandonFrame, "ack": AckFrame, "grant": GrantFrame, "refused": RefusedFrame,
}  # fmt: skip
RELAY_TO_CONTROL: dict[str, type] = {"worker": WorkerFrame, "turn_event": TurnEventFrame}
