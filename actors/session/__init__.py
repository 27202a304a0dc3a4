"""The Session actor: one per Session, owning its lifecycle, its turn queue and its worker.

`_queue` is the pure turn-queue core; `_actor` applies it on real storage and a real worker;
`_recovery` brings Sessions back after a Node restart.
"""

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
