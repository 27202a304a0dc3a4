"""The protocol: the operation registry, each op's schemas, JSON Schema and doc generation.

Pure: no I/O. Everything the Node, the SDK and the CLI agree on is defined here once. The
bottom layer it stands on (errors, IDs, clocks, timestamps, digests, the schema machinery)
lives in `maia.core`; its names are re-exported here too, so a face imports one package.
Code below the faces (storage, supervision) imports `maia.core` and never builds the registry.
The op modules' classes are re-exported lazily (module `__getattr__`), so a process pays only
for the ops it uses.
"""

import importlib
from typing import TYPE_CHECKING, Any, Final

from maia.core import DEFINITION_REF_PATTERN as DEFINITION_REF_PATTERN
from maia.core import DIGEST_PATTERN as DIGEST_PATTERN
from maia.core import ERROR_CODES as ERROR_CODES
from maia.core import GENERATED_ID_PATTERN as GENERATED_ID_PATTERN
from maia.core import ID_GRAMMAR_PATTERN as ID_GRAMMAR_PATTERN
from maia.core import ID_PREFIXES as ID_PREFIXES
from maia.core import INPUT_PREVIEW_MAX_BYTES as INPUT_PREVIEW_MAX_BYTES
from maia.core import MAX_SAFE_INTEGER as MAX_SAFE_INTEGER
from maia.core import MAX_SESSION_PENDING_TURNS as MAX_SESSION_PENDING_TURNS
from maia.core import TIMESTAMP_PATTERN as TIMESTAMP_PATTERN
from maia.core import WAIT_MILLISECONDS_MAX as WAIT_MILLISECONDS_MAX
from maia.core import WIRE_ID_MAX_LENGTH as WIRE_ID_MAX_LENGTH
from maia.core import WIRE_ID_PATTERN as WIRE_ID_PATTERN
from maia.core import Clock as Clock
from maia.core import Code as Code
from maia.core import DefinitionRef as DefinitionRef
from maia.core import ErrorCode as ErrorCode
from maia.core import FakeClock as FakeClock
from maia.core import FieldSpec as FieldSpec
from maia.core import MaiaError as MaiaError
from maia.core import SystemClock as SystemClock
from maia.core import canonical_json as canonical_json
from maia.core import check as check
from maia.core import check_revision as check_revision
from maia.core import check_wire_id as check_wire_id
from maia.core import digest_bytes as digest_bytes
from maia.core import digest_json as digest_json
from maia.core import field as field
from maia.core import format_definition_ref as format_definition_ref
from maia.core import format_timestamp_ms as format_timestamp_ms
from maia.core import id_prefix as id_prefix
from maia.core import is_digest as is_digest
from maia.core import is_wire_id as is_wire_id
from maia.core import new_id as new_id
from maia.core import parse_definition_ref as parse_definition_ref
from maia.core import parse_timestamp as parse_timestamp
from maia.core import spec as spec
from maia.core import to_json as to_json

from ._agent_shapes import SessionPrompt as SessionPrompt
from ._agent_shapes import SessionStatus as SessionStatus
from ._agent_shapes import Usage as Usage
from ._capabilities import CAPABILITY_NAMES as CAPABILITY_NAMES
from ._capabilities import NODE_CAPABILITIES as NODE_CAPABILITIES
from ._common import ACTIVITIES as ACTIVITIES
from ._common import SESSION_STATES as SESSION_STATES
from ._common import TURN_STATES as TURN_STATES
from ._common import Empty as Empty
from ._common import Project as Project
from ._common import Session as Session
from ._common import Turn as Turn
from ._config_aliases import apply_config_aliases as apply_config_aliases
from ._contract import BEGIN_MARKER as BEGIN_MARKER
from ._contract import END_MARKER as END_MARKER
from ._contract import compatibility_problems as compatibility_problems
from ._contract import lock_document as lock_document
from ._contract import render_generated_module as render_generated_module
from ._contract import render_lock as render_lock
from ._contract import render_reference as render_reference
from ._contract import splice_reference as splice_reference
from ._documents import decode_input as decode_input
from ._documents import encode_output as encode_output
from ._documents import error_document as error_document
from ._documents import operation_schema as operation_schema
from ._documents import schema_document as schema_document
from ._generated import REGISTRY_DIGEST as REGISTRY_DIGEST
from ._hello import answer_hello as answer_hello
from ._operations import DEPRECATIONS as DEPRECATIONS
from ._operations import OPERATION_GROUPS as OPERATION_GROUPS
from ._operations import REGISTRY as REGISTRY
from ._operations import REGISTRY_VERSION as REGISTRY_VERSION
from ._refusals import take_request_id as take_request_id
from ._registry import AGENT_EXPOSURE_RULE as AGENT_EXPOSURE_RULE
from ._registry import AGENT_EXPOSURES as AGENT_EXPOSURES
from ._registry import CALLER_ROLES as CALLER_ROLES
from ._registry import COMMON_ERRORS as COMMON_ERRORS
from ._registry import PROTOCOL_VERSION as PROTOCOL_VERSION
from ._registry import ExposurePolicy as ExposurePolicy
from ._registry import OperationDescriptor as OperationDescriptor
from ._registry import Registry as Registry
from ._registry import RegistryError as RegistryError
from ._registry import StreamDescriptor as StreamDescriptor
from ._registry import build_registry as build_registry
from ._versioning import DEPRECATION_KINDS as DEPRECATION_KINDS
from ._versioning import MIN_DEPRECATION_DAYS as MIN_DEPRECATION_DAYS
from ._versioning import Deprecation as Deprecation
from ._versioning import policy_problems as policy_problems

if TYPE_CHECKING:
    from ._ops_approval import APPROVAL_OPERATIONS as APPROVAL_OPERATIONS
    from ._ops_approval import Approval as Approval
    from ._ops_approval import ApprovalListInput as ApprovalListInput
    from ._ops_approval import ApprovalListOutput as ApprovalListOutput
    from ._ops_approval import ApprovalRef as ApprovalRef
    from ._ops_approval import ApprovalRespondInput as ApprovalRespondInput
    from ._ops_approval import ApprovalRespondOutput as ApprovalRespondOutput
    from ._ops_approval import ApprovalShowOutput as ApprovalShowOutput
    from ._ops_config import ConfigAdmitConfirmInput as ConfigAdmitConfirmInput
    from ._ops_config import ConfigAdmitConfirmOutput as ConfigAdmitConfirmOutput
    from ._ops_config import ConfigAdmitPreviewOutput as ConfigAdmitPreviewOutput
    from ._ops_config import ConfigChange as ConfigChange
    from ._ops_config import ConfigProblem as ConfigProblem
    from ._ops_config import ConfigScopeInput as ConfigScopeInput
    from ._ops_config import ConfigScopeStatus as ConfigScopeStatus
    from ._ops_config import ConfigShowOutput as ConfigShowOutput
    from ._ops_machine import MACHINE_OPERATIONS as MACHINE_OPERATIONS
    from ._ops_machine import Machine as Machine
    from ._ops_machine import MachineChangeConfirmInput as MachineChangeConfirmInput
    from ._ops_machine import MachineChangeInput as MachineChangeInput
    from ._ops_machine import MachineChangePreviewOutput as MachineChangePreviewOutput
    from ._ops_machine import MachineEnrollOutput as MachineEnrollOutput
    from ._ops_machine import MachineLink as MachineLink
    from ._ops_machine import MachineListInput as MachineListInput
    from ._ops_machine import MachineListOutput as MachineListOutput
    from ._ops_machine import MachineRef as MachineRef
    from ._ops_machine import MachineRevokeOutput as MachineRevokeOutput
    from ._ops_machine import MachineShowOutput as MachineShowOutput
    from ._ops_node import MailboxDepth as MailboxDepth
    from ._ops_node import NodeHelloInput as NodeHelloInput
    from ._ops_node import NodeHelloOutput as NodeHelloOutput
    from ._ops_node import NodeStatusOutput as NodeStatusOutput
    from ._ops_node import StorageEvents as StorageEvents
    from ._ops_node import StorageStatus as StorageStatus
    from ._ops_observe import DOMAINS as DOMAINS
    from ._ops_observe import OBSERVE_OPERATIONS as OBSERVE_OPERATIONS
    from ._ops_observe import SNAPSHOT_LIMIT_DEFAULT as SNAPSHOT_LIMIT_DEFAULT
    from ._ops_observe import SNAPSHOT_LIMIT_MAX as SNAPSHOT_LIMIT_MAX
    from ._ops_observe import Classification as Classification
    from ._ops_observe import Domain as Domain
    from ._ops_observe import EventBatchFrame as EventBatchFrame
    from ._ops_observe import GapFrame as GapFrame
    from ._ops_observe import Importance as Importance
    from ._ops_observe import ObservationHeartbeatFrame as ObservationHeartbeatFrame
    from ._ops_observe import ObservationQuery as ObservationQuery
    from ._ops_observe import ObservationRecord as ObservationRecord
    from ._ops_observe import ObservationWatermark as ObservationWatermark
    from ._ops_observe import ObserveInput as ObserveInput
    from ._ops_observe import ObserveOutput as ObserveOutput
    from ._ops_observe import PartitionSequence as PartitionSequence
    from ._ops_observe import ResetFrame as ResetFrame
    from ._ops_observe import SnapshotDescriptor as SnapshotDescriptor
    from ._ops_observe import SnapshotFrame as SnapshotFrame
    from ._ops_observe import SummaryFrame as SummaryFrame
    from ._ops_records import AttachedFrame as AttachedFrame
    from ._ops_records import Event as Event
    from ._ops_records import EventsReadInput as EventsReadInput
    from ._ops_records import EventsReadOutput as EventsReadOutput
    from ._ops_records import EventsSnapshot as EventsSnapshot
    from ._ops_records import FromCursor as FromCursor
    from ._ops_records import FromEvent as FromEvent
    from ._ops_records import FromSequence as FromSequence
    from ._ops_records import FromStart as FromStart
    from ._ops_records import HeartbeatFrame as HeartbeatFrame
    from ._ops_records import OpenItem as OpenItem
    from ._ops_records import Receipt as Receipt
    from ._ops_records import ReceiptGetInput as ReceiptGetInput
    from ._ops_records import ReceiptGetOutput as ReceiptGetOutput
    from ._ops_records import ReceiptListInput as ReceiptListInput
    from ._ops_records import ReceiptListOutput as ReceiptListOutput
    from ._ops_records import ReceiptTarget as ReceiptTarget
    from ._ops_records import RecordsFrame as RecordsFrame
    from ._ops_records import ResyncFrame as ResyncFrame
    from ._ops_records import SessionAttachInput as SessionAttachInput
    from ._ops_records import SessionAttachOutput as SessionAttachOutput
    from ._ops_records import SessionStreamRecord as SessionStreamRecord
    from ._ops_records import StreamCursor as StreamCursor
    from ._ops_records import SynchronizedFrame as SynchronizedFrame
    from ._ops_relocate import ProjectRelocateConfirmInput as ProjectRelocateConfirmInput
    from ._ops_relocate import ProjectRelocateConfirmOutput as ProjectRelocateConfirmOutput
    from ._ops_relocate import ProjectRelocatePreviewInput as ProjectRelocatePreviewInput
    from ._ops_relocate import ProjectRelocatePreviewOutput as ProjectRelocatePreviewOutput
    from ._ops_relocate import ProjectRepository as ProjectRepository
    from ._ops_routine import MAX_ROUTINE_NAME_LENGTH as MAX_ROUTINE_NAME_LENGTH
    from ._ops_routine import ROUTINE_OPERATIONS as ROUTINE_OPERATIONS
    from ._ops_routine import ROUTINE_STATES as ROUTINE_STATES
    from ._ops_routine import FireFailure as FireFailure
    from ._ops_routine import NextFire as NextFire
    from ._ops_routine import Routine as Routine
    from ._ops_routine import RoutineChangeInput as RoutineChangeInput
    from ._ops_routine import RoutineConfirmInput as RoutineConfirmInput
    from ._ops_routine import RoutineCreateConfirmInput as RoutineCreateConfirmInput
    from ._ops_routine import RoutineCreatePreviewInput as RoutineCreatePreviewInput
    from ._ops_routine import RoutineCreatePreviewOutput as RoutineCreatePreviewOutput
    from ._ops_routine import RoutineFire as RoutineFire
    from ._ops_routine import RoutineListInput as RoutineListInput
    from ._ops_routine import RoutineListOutput as RoutineListOutput
    from ._ops_routine import RoutinePreviewOutput as RoutinePreviewOutput
    from ._ops_routine import RoutineRef as RoutineRef
    from ._ops_routine import RoutineResult as RoutineResult
    from ._ops_routine import RoutineRunResult as RoutineRunResult
    from ._ops_routine import RoutineSchedule as RoutineSchedule
    from ._ops_routine import RoutineShowOutput as RoutineShowOutput
    from ._ops_routine import RoutineTemplate as RoutineTemplate
    from ._ops_session import ProjectAddInput as ProjectAddInput
    from ._ops_session import ProjectListInput as ProjectListInput
    from ._ops_session import ProjectListOutput as ProjectListOutput
    from ._ops_session import ProjectResult as ProjectResult
    from ._ops_session import ProjectShowInput as ProjectShowInput
    from ._ops_session import ProjectShowOutput as ProjectShowOutput
    from ._ops_session import ReferenceCandidate as ReferenceCandidate
    from ._ops_session import ReferenceResolveInput as ReferenceResolveInput
    from ._ops_session import ReferenceResolveOutput as ReferenceResolveOutput
    from ._ops_session import SessionArchiveInput as SessionArchiveInput
    from ._ops_session import SessionCreateInput as SessionCreateInput
    from ._ops_session import SessionListInput as SessionListInput
    from ._ops_session import SessionListOutput as SessionListOutput
    from ._ops_session import SessionRef as SessionRef
    from ._ops_session import SessionRenameInput as SessionRenameInput
    from ._ops_session import SessionResult as SessionResult
    from ._ops_session import SessionShowOutput as SessionShowOutput
    from ._ops_session import SessionStopInput as SessionStopInput
    from ._ops_session import SessionWaitInput as SessionWaitInput
    from ._ops_session import SessionWaitOutput as SessionWaitOutput
    from ._ops_turn import QueueEntry as QueueEntry
    from ._ops_turn import QueueWait as QueueWait
    from ._ops_turn import SessionRefInput as SessionRefInput
    from ._ops_turn import TurnCancelInput as TurnCancelInput
    from ._ops_turn import TurnInterruptInput as TurnInterruptInput
    from ._ops_turn import TurnItem as TurnItem
    from ._ops_turn import TurnListInput as TurnListInput
    from ._ops_turn import TurnListOutput as TurnListOutput
    from ._ops_turn import TurnQueueListOutput as TurnQueueListOutput
    from ._ops_turn import TurnRef as TurnRef
    from ._ops_turn import TurnResult as TurnResult
    from ._ops_turn import TurnSendInput as TurnSendInput
    from ._ops_turn import TurnSendOutput as TurnSendOutput
    from ._ops_turn import TurnShowInput as TurnShowInput
    from ._ops_turn import TurnShowOutput as TurnShowOutput
    from ._ops_turn import TurnWaitInput as TurnWaitInput
    from ._ops_turn import TurnWaitOutput as TurnWaitOutput
    from ._ops_webhook import WEBHOOK_OPERATIONS as WEBHOOK_OPERATIONS
    from ._ops_webhook import Webhook as Webhook
    from ._ops_webhook import WebhookAddChange as WebhookAddChange
    from ._ops_webhook import WebhookAttempt as WebhookAttempt
    from ._ops_webhook import WebhookChange as WebhookChange
    from ._ops_webhook import WebhookChangeConfirmInput as WebhookChangeConfirmInput
    from ._ops_webhook import WebhookChangeConfirmOutput as WebhookChangeConfirmOutput
    from ._ops_webhook import WebhookChangePreviewInput as WebhookChangePreviewInput
    from ._ops_webhook import WebhookChangePreviewOutput as WebhookChangePreviewOutput
    from ._ops_webhook import WebhookDelivery as WebhookDelivery
    from ._ops_webhook import WebhookListInput as WebhookListInput
    from ._ops_webhook import WebhookListOutput as WebhookListOutput
    from ._ops_webhook import WebhookRedeliverChange as WebhookRedeliverChange
    from ._ops_webhook import WebhookRemoveChange as WebhookRemoveChange
    from ._ops_webhook import WebhookShowInput as WebhookShowInput
    from ._ops_webhook import WebhookShowOutput as WebhookShowOutput
    from ._ops_webhook import WebhookSpec as WebhookSpec
    from ._ops_webhook import WebhookTestChange as WebhookTestChange

# The op modules' classes load on first use: importing them all builds ~200 attrs classes,
# most of a short command's start-up (the registry imports a group only when it is used).
_LAZY: Final = {
    "APPROVAL_OPERATIONS": "_ops_approval",
    "MACHINE_OPERATIONS": "_ops_machine",
    "Machine": "_ops_machine",
    "MachineChangeConfirmInput": "_ops_machine",
    "MachineChangeInput": "_ops_machine",
    "MachineChangePreviewOutput": "_ops_machine",
    "MachineEnrollOutput": "_ops_machine",
    "MachineLink": "_ops_machine",
    "MachineListInput": "_ops_machine",
    "MachineListOutput": "_ops_machine",
    "MachineRef": "_ops_machine",
    "MachineRevokeOutput": "_ops_machine",
    "MachineShowOutput": "_ops_machine",
    "Approval": "_ops_approval",
    "ApprovalListInput": "_ops_approval",
    "ApprovalListOutput": "_ops_approval",
    "ApprovalRef": "_ops_approval",
    "ApprovalRespondInput": "_ops_approval",
    "ApprovalRespondOutput": "_ops_approval",
    "ApprovalShowOutput": "_ops_approval",
    "ConfigAdmitConfirmInput": "_ops_config",
    "ConfigAdmitConfirmOutput": "_ops_config",
    "ConfigAdmitPreviewOutput": "_ops_config",
    "ConfigChange": "_ops_config",
    "ConfigProblem": "_ops_config",
    "ConfigScopeInput": "_ops_config",
    "ConfigScopeStatus": "_ops_config",
    "ConfigShowOutput": "_ops_config",
    "MailboxDepth": "_ops_node",
    "NodeHelloInput": "_ops_node",
    "NodeHelloOutput": "_ops_node",
    "NodeStatusOutput": "_ops_node",
    "StorageEvents": "_ops_node",
    "StorageStatus": "_ops_node",
    "OBSERVE_OPERATIONS": "_ops_observe",
    "DOMAINS": "_ops_observe",
    "SNAPSHOT_LIMIT_DEFAULT": "_ops_observe",
    "SNAPSHOT_LIMIT_MAX": "_ops_observe",
    "Classification": "_ops_observe",
    "Domain": "_ops_observe",
    "Importance": "_ops_observe",
    "ObservationQuery": "_ops_observe",
    "ObserveInput": "_ops_observe",
    "ObserveOutput": "_ops_observe",
    "ObservationRecord": "_ops_observe",
    "ObservationWatermark": "_ops_observe",
    "SnapshotFrame": "_ops_observe",
    "EventBatchFrame": "_ops_observe",
    "ObservationHeartbeatFrame": "_ops_observe",
    "GapFrame": "_ops_observe",
    "ResetFrame": "_ops_observe",
    "SummaryFrame": "_ops_observe",
    "SnapshotDescriptor": "_ops_observe",
    "PartitionSequence": "_ops_observe",
    "AttachedFrame": "_ops_records",
    "Event": "_ops_records",
    "EventsReadInput": "_ops_records",
    "EventsReadOutput": "_ops_records",
    "EventsSnapshot": "_ops_records",
    "FromCursor": "_ops_records",
    "FromEvent": "_ops_records",
    "FromSequence": "_ops_records",
    "FromStart": "_ops_records",
    "HeartbeatFrame": "_ops_records",
    "OpenItem": "_ops_records",
    "Receipt": "_ops_records",
    "ReceiptGetInput": "_ops_records",
    "ReceiptGetOutput": "_ops_records",
    "ReceiptListInput": "_ops_records",
    "ReceiptListOutput": "_ops_records",
    "ReceiptTarget": "_ops_records",
    "RecordsFrame": "_ops_records",
    "ResyncFrame": "_ops_records",
    "SessionAttachInput": "_ops_records",
    "SessionAttachOutput": "_ops_records",
    "SessionStreamRecord": "_ops_records",
    "StreamCursor": "_ops_records",
    "SynchronizedFrame": "_ops_records",
    "ProjectRelocateConfirmInput": "_ops_relocate",
    "ProjectRelocateConfirmOutput": "_ops_relocate",
    "ProjectRelocatePreviewInput": "_ops_relocate",
    "ProjectRelocatePreviewOutput": "_ops_relocate",
    "ProjectRepository": "_ops_relocate",
    "MAX_ROUTINE_NAME_LENGTH": "_ops_routine",
    "ROUTINE_OPERATIONS": "_ops_routine",
    "ROUTINE_STATES": "_ops_routine",
    "FireFailure": "_ops_routine",
    "NextFire": "_ops_routine",
    "Routine": "_ops_routine",
    "RoutineChangeInput": "_ops_routine",
    "RoutineConfirmInput": "_ops_routine",
    "RoutineCreateConfirmInput": "_ops_routine",
    "RoutineCreatePreviewInput": "_ops_routine",
    "RoutineCreatePreviewOutput": "_ops_routine",
    "RoutineFire": "_ops_routine",
    "RoutineListInput": "_ops_routine",
    "RoutineListOutput": "_ops_routine",
    "RoutinePreviewOutput": "_ops_routine",
    "RoutineRef": "_ops_routine",
    "RoutineResult": "_ops_routine",
    "RoutineRunResult": "_ops_routine",
    "RoutineSchedule": "_ops_routine",
    "RoutineShowOutput": "_ops_routine",
    "RoutineTemplate": "_ops_routine",
    "ProjectAddInput": "_ops_session",
    "ProjectListInput": "_ops_session",
    "ProjectListOutput": "_ops_session",
    "ProjectResult": "_ops_session",
    "ProjectShowInput": "_ops_session",
    "ProjectShowOutput": "_ops_session",
    "ReferenceCandidate": "_ops_session",
    "ReferenceResolveInput": "_ops_session",
    "ReferenceResolveOutput": "_ops_session",
    "SessionArchiveInput": "_ops_session",
    "SessionCreateInput": "_ops_session",
    "SessionListInput": "_ops_session",
    "SessionListOutput": "_ops_session",
    "SessionRef": "_ops_session",
    "SessionRenameInput": "_ops_session",
    "SessionResult": "_ops_session",
    "SessionShowOutput": "_ops_session",
    "SessionStopInput": "_ops_session",
    "SessionWaitInput": "_ops_session",
    "SessionWaitOutput": "_ops_session",
    "QueueEntry": "_ops_turn",
    "QueueWait": "_ops_turn",
    "SessionRefInput": "_ops_turn",
    "TurnCancelInput": "_ops_turn",
    "TurnInterruptInput": "_ops_turn",
    "TurnItem": "_ops_turn",
    "TurnListInput": "_ops_turn",
    "TurnListOutput": "_ops_turn",
    "TurnQueueListOutput": "_ops_turn",
    "TurnRef": "_ops_turn",
    "TurnShowInput": "_ops_turn",
    "TurnResult": "_ops_turn",
    "TurnSendInput": "_ops_turn",
    "TurnSendOutput": "_ops_turn",
    "TurnShowOutput": "_ops_turn",
    "TurnWaitInput": "_ops_turn",
    "TurnWaitOutput": "_ops_turn",
    "WEBHOOK_OPERATIONS": "_ops_webhook",
    "Webhook": "_ops_webhook",
    "WebhookAddChange": "_ops_webhook",
    "WebhookAttempt": "_ops_webhook",
    "WebhookChange": "_ops_webhook",
    "WebhookChangeConfirmInput": "_ops_webhook",
    "WebhookChangeConfirmOutput": "_ops_webhook",
    "WebhookChangePreviewInput": "_ops_webhook",
    "WebhookChangePreviewOutput": "_ops_webhook",
    "WebhookDelivery": "_ops_webhook",
    "WebhookListInput": "_ops_webhook",
    "WebhookListOutput": "_ops_webhook",
    "WebhookRedeliverChange": "_ops_webhook",
    "WebhookRemoveChange": "_ops_webhook",
    "WebhookShowInput": "_ops_webhook",
    "WebhookShowOutput": "_ops_webhook",
    "WebhookSpec": "_ops_webhook",
    "WebhookTestChange": "_ops_webhook",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
