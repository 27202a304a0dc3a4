"""The Session actor: one per Session, owning its lifecycle, its turn queue and its worker.

`_queue` is the pure turn-queue core; `_actor` applies it on real storage and a real worker;
`_recovery` brings Sessions back after a Node restart.
"""

from ._launch import StorageEpochSource as StorageEpochSource
from ._launch import kill_leftovers as kill_leftovers
from ._launch import worker_spec as worker_spec
from ._messages import ArchiveSession as ArchiveSession
from ._messages import CancelTurn as CancelTurn
from ._messages import Command as Command
from ._messages import Flush as Flush
from ._messages import IdleTick as IdleTick
from ._messages import InterruptTurn as InterruptTurn
from ._messages import Message as Message
from ._messages import PendingSend as PendingSend
from ._messages import Progress as Progress
from ._messages import Reclaim as Reclaim
from ._messages import RenameSession as RenameSession
from ._messages import Resume as Resume
from ._messages import SendBatch as SendBatch
from ._messages import SendTurn as SendTurn
from ._messages import SessionContext as SessionContext
from ._messages import StopSession as StopSession
from ._messages import WallTime as WallTime
from ._messages import WorkerExited as WorkerExited
from ._messages import WorkerInitialized as WorkerInitialized
from ._messages import WorkerSlots as WorkerSlots
from ._messages import WorkerSpawned as WorkerSpawned
from ._notify import Notifier as Notifier
from ._queue import Cancel as Cancel
from ._queue import Close as Close
from ._queue import Dispatch as Dispatch
from ._queue import FailTurn as FailTurn
from ._queue import Interrupt as Interrupt
from ._queue import QueueAction as QueueAction
from ._queue import QueueEvent as QueueEvent
from ._queue import QueueState as QueueState
from ._queue import ReleaseAt as ReleaseAt
from ._queue import Send as Send
from ._queue import SendInterrupt as SendInterrupt
from ._queue import StartWorker as StartWorker
from ._queue import StopWorker as StopWorker
from ._queue import Tick as Tick
from ._queue import TurnEnded as TurnEnded
from ._queue import Worker as Worker
from ._queue import WorkerGone as WorkerGone
from ._queue import WorkerReady as WorkerReady
from ._queue import recover as recover
from ._queue import step as step
from ._recovery import RecoveryReport as RecoveryReport
from ._recovery import recover_sessions as recover_sessions
from ._runtime import SessionRuntime as SessionRuntime
from ._runtime import open_session_runtime as open_session_runtime
from ._session import SessionActor as SessionActor
from ._session import rehydrate as rehydrate
from ._store import LIVE_SESSION_STATES as LIVE_SESSION_STATES
from ._store import PENDING_TURN_STATES as PENDING_TURN_STATES
from ._views import SESSION_COLUMNS as SESSION_COLUMNS
from ._views import TURN_COLUMNS as TURN_COLUMNS
from ._views import input_preview as input_preview
from ._views import mutation_session as mutation_session
from ._views import output_text as output_text
from ._views import session_from_row as session_from_row
from ._views import session_view as session_view
from ._views import turn_from_row as turn_from_row
from ._views import turn_view as turn_view
