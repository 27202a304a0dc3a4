"""The worker supervisor's public names (spawn, heartbeat, fence, bounded stop)."""

from .._process_group import StderrRing as StderrRing
from .._process_group import become_subreaper as become_subreaper
from .._process_group import is_subreaper as is_subreaper
from .._process_group import release_subreaper as release_subreaper
from .._process_group import sweep_strays as sweep_strays
from .._worker_config import EpochSource as EpochSource
from .._worker_config import FileEpochSource as FileEpochSource
from .._worker_config import MemoryEpochSource as MemoryEpochSource
from .._worker_config import WorkerSpec as WorkerSpec
from .._worker_config import WorkerTimings as WorkerTimings
from .._worker_handle import WorkerHandle as WorkerHandle
from .._worker_stop import stop_process_tree as stop_process_tree
from .._worker_supervisor import WorkerSupervisor as WorkerSupervisor
from .._worker_supervisor import open_worker_supervisor as open_worker_supervisor
from .._worker_supervisor import serve_worker_supervisor as serve_worker_supervisor
from .._worker_types import TOOL_UNAVAILABLE as TOOL_UNAVAILABLE
from .._worker_types import DiagnosticBatch as DiagnosticBatch
from .._worker_types import DiagnosticsSink as DiagnosticsSink
from .._worker_types import ExitInfo as ExitInfo
from .._worker_types import TurnEvent as TurnEvent
from .._worker_types import TurnEvents as TurnEvents
from .._worker_types import WorkerFailed as WorkerFailed
from .._worker_types import WorkerState as WorkerState
from .._worker_types import WorkerStatistics as WorkerStatistics
from .._worker_types import tool_refusal as tool_refusal
