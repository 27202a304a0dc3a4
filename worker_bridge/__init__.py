"""The worker protocol: frames, limits, a sans-IO connection, a thin trio adapter, the
worker-side SDK and the reference workers. The lowest layer: imports nothing of Maia's.

Names that need attrs or trio (`Connection`, the frame classes, `TrioFrameStream`) load on
first use, so a worker (`python -m worker_bridge.workers.echo`) starts on the stdlib alone.
"""

from __future__ import annotations

import importlib

from ._artifacts import MAX_ARTIFACT_BYTES as MAX_ARTIFACT_BYTES
from ._artifacts import ArtifactError as ArtifactError
from ._artifacts import check_reference as check_reference
from ._artifacts import read_artifact as read_artifact
from ._artifacts import release_artifact as release_artifact
from ._artifacts import write_artifact as write_artifact
from ._diagnostics import DiagnosticQueue as DiagnosticQueue
from ._errors import LocalProtocolError as LocalProtocolError
from ._errors import ProtocolError as ProtocolError
from ._errors import RemoteProtocolError as RemoteProtocolError
from ._json import STRICT_DECODER as STRICT_DECODER
from ._json import check_depth as check_depth
from ._json import encode as encode
from ._json import encode_string as encode_string
from ._json import parse_untrusted as parse_untrusted
from ._limits import HEARTBEAT_INTERVAL_MS as HEARTBEAT_INTERVAL_MS
from ._limits import INIT_TIMEOUT_MS as INIT_TIMEOUT_MS
from ._limits import INTERRUPT_GRACE_MS as INTERRUPT_GRACE_MS
from ._limits import MAX_BATCH_BYTES as MAX_BATCH_BYTES
from ._limits import MAX_BATCH_RECORDS as MAX_BATCH_RECORDS
from ._limits import MAX_CONTENT_BYTES as MAX_CONTENT_BYTES
from ._limits import MAX_DIAGNOSTIC_BYTES as MAX_DIAGNOSTIC_BYTES
from ._limits import MAX_DIAGNOSTIC_RECORDS as MAX_DIAGNOSTIC_RECORDS
from ._limits import MAX_FRAME_BYTES as MAX_FRAME_BYTES
from ._limits import MAX_TOOL_RESULT_BYTES as MAX_TOOL_RESULT_BYTES
from ._limits import MAX_UNACKED_EVENTS as MAX_UNACKED_EVENTS
from ._limits import MISSED_HEARTBEATS as MISSED_HEARTBEATS
from ._limits import PROTOCOL_VERSION as PROTOCOL_VERSION
from ._limits import TERMINATE_GRACE_MS as TERMINATE_GRACE_MS
from ._schema import FRAMES as FRAMES
from ._schema import NODE as NODE
from ._schema import WORKER as WORKER
from ._schema import check_payload as check_payload
from ._splitter import LineSplitter as LineSplitter
from ._state import TRANSITIONS as TRANSITIONS
from ._state import State as State
from ._wire import NEED_DATA as NEED_DATA
from ._wire import PEER_CLOSED as PEER_CLOSED
from ._wire import Signal as Signal
from ._wire import WireConnection as WireConnection

# typing costs a worker ~20 ms of start-up: import it for the type checker only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


if TYPE_CHECKING:
    from ._connection import Connection as Connection
    from ._frames import FRAME_CLASSES as FRAME_CLASSES
    from ._frames import Ack as Ack
    from ._frames import Error as Error
    from ._frames import Event as Event
    from ._frames import Frame as Frame
    from ._frames import Heartbeat as Heartbeat
    from ._frames import Hello as Hello
    from ._frames import Initialize as Initialize
    from ._frames import Initialized as Initialized
    from ._frames import Interrupt as Interrupt
    from ._frames import Interrupted as Interrupted
    from ._frames import ObservationBatch as ObservationBatch
    from ._frames import Prompt as Prompt
    from ._frames import Shutdown as Shutdown
    from ._frames import Terminal as Terminal
    from ._frames import ToolCall as ToolCall
    from ._frames import ToolResult as ToolResult
    from ._frames import frame_from_wire as frame_from_wire
    from ._frames import frame_to_wire as frame_to_wire
    from ._sdk import WorkerContext as WorkerContext
    from ._sdk import run_worker as run_worker
    from ._trio import FrameWriteTimeout as FrameWriteTimeout
    from ._trio import TrioFrameStream as TrioFrameStream
    from ._turn import Turn as Turn

_LAZY = {
    "Connection": "_connection",
    "FrameWriteTimeout": "_trio",
    "TrioFrameStream": "_trio",
    "run_worker": "_sdk",
    "Turn": "_turn",
    "WorkerContext": "_sdk",
    **dict.fromkeys(
        (
            "FRAME_CLASSES",
            "Ack",
            "Error",
            "Event",
            "Frame",
            "Heartbeat",
            "Hello",
            "Initialize",
            "Initialized",
            "Interrupt",
            "Interrupted",
            "ObservationBatch",
            "Prompt",
            "Shutdown",
            "Terminal",
            "ToolCall",
            "ToolResult",
            "frame_from_wire",
            "frame_to_wire",
        ),
        "_frames",
    ),
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'worker_bridge' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
