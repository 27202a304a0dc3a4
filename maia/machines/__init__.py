"""The machine link (issue 16): Execution Nodes connect out to a Control Node over WebSocket.

`_frames` holds the frames and their strict decoding, `_gate` the upgrade checks,
`_listener` the Control Node's side, the relay (actors.machine) where lease and worker frames go,
`_execution` the Execution Node's side, `_credential_file` its 0600 credential and
`_children` the two as root-tree children of a Node. See docs/machines.md.
"""

from ._children import control_child as control_child
from ._children import execution_child as execution_child
from ._credential_file import MachineCredential as MachineCredential
from ._credential_file import credential_path as credential_path
from ._credential_file import read_credential as read_credential
from ._execution import ExecutionLink as ExecutionLink
from ._execution import ExecutionState as ExecutionState
from ._frames import MAX_FRAME_BYTES as MAX_FRAME_BYTES
from ._frames import TO_CONTROL as TO_CONTROL
from ._frames import TO_EXECUTION as TO_EXECUTION
from ._frames import decode_frame as decode_frame
from ._frames import encode_frame as encode_frame
from ._gate import ENROLL_PATH as ENROLL_PATH
from ._gate import LINK_PATH as LINK_PATH
from ._listener import MachineListener as MachineListener
