"""The one place the Node reads the operation registry and its schema classes.

The registry and its codecs are public names of `maia.protocol`; the node ops' nested
output classes (StorageStatus, MailboxDepth) are not exported there yet, so they are taken
from their module here and nowhere else.
"""

from __future__ import annotations

from maia.protocol import CAPABILITY_NAMES as NODE_CAPABILITY_NAMES
from maia.protocol import PROTOCOL_VERSION as PROTOCOL_VERSION
from maia.protocol import REGISTRY as REGISTRY
from maia.protocol import Empty as Empty
from maia.protocol import MailboxDepth as MailboxDepth
from maia.protocol import NodeHelloInput as NodeHelloInput
from maia.protocol import NodeHelloOutput as NodeHelloOutput
from maia.protocol import NodeStatusOutput as NodeStatusOutput
from maia.protocol import OperationDescriptor as OperationDescriptor
from maia.protocol import StorageStatus as StorageStatus
from maia.protocol import decode_input as decode_input
from maia.protocol import encode_output as encode_output

__all__ = [
    "NODE_CAPABILITY_NAMES",
    "PROTOCOL_VERSION",
    "REGISTRY",
    "Empty",
    "MailboxDepth",
    "NodeHelloInput",
    "NodeHelloOutput",
    "NodeStatusOutput",
    "OperationDescriptor",
    "StorageStatus",
    "decode_input",
    "encode_output",
]
