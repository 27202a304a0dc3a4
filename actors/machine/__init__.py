"""Machines (issue 16): Execution Nodes enrolled on this Control Node and their links.

`_sql` holds the machines table, `_secrets` the one-time tokens and credentials,
`_enrollment` enrollment, revocation and authentication as writes (judged by the MN0
registration rules of `supervision.leases`), `_links` the run's live links and `_kind` the
kind the runtime opens (`MACHINES`). The machine assignment is the kind's actor:
`_assignment_table` its lifecycle, `_assignments` its SQL, `_assignment_core` its pure core
(the MN0 Control lease machine), `_assignment_actor` the actor, `_assignment_board` what it
publishes for placement and `machine.show`. See docs/machines.md.
"""

from ._assignment_actor import MachineAssignmentActor as MachineAssignmentActor
from ._assignment_board import AssignmentBoard as AssignmentBoard
from ._assignment_board import AssignmentLease as AssignmentLease
from ._assignment_core import EXPIRY_GRACE_MS as EXPIRY_GRACE_MS
from ._assignment_core import GRANT_TTL_MS as GRANT_TTL_MS
from ._assignment_core import Plan as Plan
from ._assignment_core import decide as decide
from ._assignment_core import expired as expired
from ._assignment_core import expiry_reconciled as expiry_reconciled
from ._assignment_core import fresh as fresh
from ._assignment_core import plan_row as plan_row
from ._assignment_core import restart_barrier as restart_barrier
from ._assignment_core import restore as restore
from ._assignment_core import wakes as wakes
from ._assignment_core import wants_launch as wants_launch
from ._assignment_messages import AssignmentContext as AssignmentContext
from ._assignment_messages import AssignmentMessage as AssignmentMessage
from ._assignment_messages import LeaseRequest as LeaseRequest
from ._assignment_messages import Place as Place
from ._assignment_messages import Restarted as Restarted
from ._assignment_messages import Send as Send
from ._assignment_messages import Status as Status
from ._assignment_messages import environment_digest as environment_digest
from ._assignment_table import ASSIGNMENT_TABLE as ASSIGNMENT_TABLE
from ._assignment_table import AssignmentEvent as AssignmentEvent
from ._assignment_table import AssignmentState as AssignmentState
from ._assignments import ASSIGNMENT_ROWS as ASSIGNMENT_ROWS
from ._assignments import AssignmentRow as AssignmentRow
from ._assignments import AssignmentRows as AssignmentRows
from ._assignments import all_assignments as all_assignments
from ._assignments import assignments_in as assignments_in
from ._assignments import count_placed as count_placed
from ._assignments import creation_write as creation_write
from ._assignments import find_assignment as find_assignment
from ._assignments import get_assignment as get_assignment
from ._assignments import new_assignment as new_assignment
from ._assignments import place_session as place_session
from ._assignments import placement_of as placement_of
from ._enrollment import OWNER_TYPE as OWNER_TYPE
from ._enrollment import TOKEN_TTL_MS as TOKEN_TTL_MS
from ._enrollment import Credential as Credential
from ._enrollment import authenticate_write as authenticate_write
from ._enrollment import enroll_write as enroll_write
from ._enrollment import judge_enroll as judge_enroll
from ._enrollment import judge_revoke as judge_revoke
from ._enrollment import redeem_write as redeem_write
from ._enrollment import refused as refused
from ._enrollment import revoke_write as revoke_write
from ._enrollment import token_of as token_of
from ._evidence_ledger import MAX_OPEN as MAX_OPEN
from ._evidence_ledger import EvidenceLedger as EvidenceLedger
from ._evidence_ledger import SourceLedger as SourceLedger
from ._kind import MACHINES as MACHINES
from ._kind import MachineKind as MachineKind
from ._kind import MachineService as MachineService
from ._links import AckLedger as AckLedger
from ._links import LinkBoard as LinkBoard
from ._links import LinkState as LinkState
from ._placing import PlacingSupervisor as PlacingSupervisor
from ._recovered import RecoveredAttempt as RecoveredAttempt
from ._recovered import RecoveredAttempts as RecoveredAttempts
from ._recovered import close_attempt as close_attempt
from ._recovered import recovered_attempts as recovered_attempts
from ._relay import MachineRelay as MachineRelay
from ._relay import spec_digest as spec_digest
from ._relay import wire_spec as wire_spec
from ._relay_frames import RELAY_TO_CONTROL as RELAY_TO_CONTROL
from ._relay_frames import RELAY_TO_EXECUTION as RELAY_TO_EXECUTION
from ._relay_frames import AbandonFrame as AbandonFrame
from ._relay_frames import AckFrame as AckFrame
from ._relay_frames import GrantFrame as GrantFrame
from ._relay_frames import InterruptFrame as InterruptFrame
from ._relay_frames import LaunchAssignmentFrame as LaunchAssignmentFrame
from ._relay_frames import LaunchWorkerFrame as LaunchWorkerFrame
from ._relay_frames import PromptFrame as PromptFrame
from ._relay_frames import RefusedFrame as RefusedFrame
from ._relay_frames import StopWorkerFrame as StopWorkerFrame
from ._relay_frames import TurnEventFrame as TurnEventFrame
from ._relay_frames import WireSpec as WireSpec
from ._relay_frames import WorkerFrame as WorkerFrame
from ._remote_worker import RemoteWorkerHandle as RemoteWorkerHandle
from ._secrets import MAX_SECRET_LENGTH as MAX_SECRET_LENGTH
from ._secrets import TokenParts as TokenParts
from ._secrets import credential_machine as credential_machine
from ._secrets import listener_fingerprint as listener_fingerprint
from ._secrets import make_credential as make_credential
from ._secrets import make_token as make_token
from ._secrets import matches as matches
from ._secrets import new_machine_id as new_machine_id
from ._secrets import parse_token as parse_token
from ._secrets import pin_token as pin_token
from ._secrets import set_listener_fingerprint as set_listener_fingerprint
from ._secrets import sha256_hex as sha256_hex
from ._secrets import split_token as split_token
from ._secrets import token_key as token_key
from ._sql import MAX_MACHINES as MAX_MACHINES
from ._sql import MachineRecord as MachineRecord
from ._sql import MachineState as MachineState
from ._sql import count_machines as count_machines
from ._sql import get_machine as get_machine
from ._sql import insert_pending as insert_pending
from ._sql import list_machines as list_machines
from ._sql import touch_machine as touch_machine
from ._sql import update_machine as update_machine
from ._trace_hook import MAX_TRACE_BYTES as MAX_TRACE_BYTES
from ._trace_hook import TRACE_ENV as TRACE_ENV
from ._trace_hook import MachineTrace as MachineTrace

KIND = MACHINES  # what `python -m actors._diagrams` collects
