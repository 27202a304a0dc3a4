"""The machine link (issue 16): Execution Nodes connect out to a Control Node over WebSocket.

`_frames` holds the frames and their strict decoding, `_gate` the upgrade checks,
`_listener` the Control Node's side, the relay (actors.machine) where lease and worker frames go,
`_execution` the Execution Node's side, `_credential_file` its 0600 credential and
`_children` the two as root-tree children of a Node, `_outbox` the evidence kept until
Control acknowledges it (sent again after a reconnect; `_outbox_store` keeps it on the
Node's SQLite across a restart), `_tls` wss:// with the Control
Node's certificate pinned. See docs/machines.md.
"""

from ._children import control_child as control_child
from ._children import execution_child as execution_child
from ._credential_file import MachineCredential as MachineCredential
from ._credential_file import credential_path as credential_path
from ._credential_file import read_credential as read_credential
from ._credential_file import write_credential as write_credential
from ._exec_assignments import ExecutionAssignments as ExecutionAssignments
from ._exec_state import load_states as load_states
from ._exec_state import previous_boots as previous_boots
from ._exec_state import save_states as save_states
from ._execution import ExecutionLink as ExecutionLink
from ._execution import ExecutionState as ExecutionState
from ._execution import LinkRefused as LinkRefused
from ._frames import MAX_FRAME_BYTES as MAX_FRAME_BYTES
from ._frames import TO_CONTROL as TO_CONTROL
from ._frames import TO_EXECUTION as TO_EXECUTION
from ._frames import EnrolledFrame as EnrolledFrame
from ._frames import EnrollFrame as EnrollFrame
from ._frames import ErrorFrame as ErrorFrame
from ._frames import FenceFrame as FenceFrame
from ._frames import HelloFrame as HelloFrame
from ._frames import LeaseRequestFrame as LeaseRequestFrame
from ._frames import StatusFrame as StatusFrame
from ._frames import WelcomeFrame as WelcomeFrame
from ._frames import decode_frame as decode_frame
from ._frames import encode_frame as encode_frame
from ._frames import error_frame as error_frame
from ._gate import ENROLL_PATH as ENROLL_PATH
from ._gate import LINK_PATH as LINK_PATH
from ._gate import Admitted as Admitted
from ._gate import Refusal as Refusal
from ._gate import check_machine_upgrade as check_machine_upgrade
from ._listener import MachineListener as MachineListener
from ._outbox import EvidenceOutbox as EvidenceOutbox
from ._outbox_store import KeptRecord as KeptRecord
from ._outbox_store import KeptSource as KeptSource
from ._outbox_store import OutboxStore as OutboxStore
from ._outbox_store import restored_spool as restored_spool
from ._tls import ListenerTls as ListenerTls
from ._tls import PinMismatch as PinMismatch
from ._tls import TlsFilesInvalid as TlsFilesInvalid
from ._tls import certificate_fingerprint as certificate_fingerprint
from ._tls import listener_tls as listener_tls
from ._tls import open_link as open_link
from ._tls import open_pinned_stream as open_pinned_stream
