"""The actor runtime and the per-aggregate actors (Session, and the kinds after it).

For kind authors (docs/actors.md): a kind is its table (`TransitionTable`, with a `creation`
row and its recovery column), its SQL (`Rows`), its pure core (`Core.decide` returning a
`Decision`) and, for kinds of one row per actor, `AggregateKind`; the runtime
(`open_actor_runtime`) gives it the one write path (`WritePath`, `Write`, `Change`), durable
timers (`Wake`, `Fired`), effect scopes, batch handling and typed errors.
"""

from ._activations import ActivationSlots as ActivationSlots
from ._activations import Held as Held
from ._activations import Wanted as Wanted
from ._actor import Actor as Actor
from ._actor import ActorState as ActorState
from ._actor import ActorStatistics as ActorStatistics
from ._actor import EffectFailed as EffectFailed
from ._actor import Envelope as Envelope
from ._aggregate import AggregateActor as AggregateActor
from ._aggregate import Core as Core
from ._aggregate import Decision as Decision
from ._aggregate import Effect as Effect
from ._aggregate import is_stale as is_stale
from ._clocks import TrioClock as TrioClock
from ._effects import EffectScope as EffectScope
from ._errors import ActorClosed as ActorClosed
from ._errors import ActorError as ActorError
from ._errors import ActorOverloaded as ActorOverloaded
from ._errors import ActorStopped as ActorStopped
from ._errors import AskTimedOut as AskTimedOut
from ._errors import NotServing as NotServing
from ._errors import to_wire as to_wire
from ._flush import FlushTimer as FlushTimer
from ._graph import Edge as Edge
from ._notify import Notifier as Notifier
from ._notify import Wakeup as Wakeup
from ._registry import ActorRegistry as ActorRegistry
from ._registry import Behaviour as Behaviour
from ._registry import RegistryStatistics as RegistryStatistics
from ._runtime import ActorRuntime as ActorRuntime
from ._runtime import AggregateKind as AggregateKind
from ._runtime import AggregateKindHandle as AggregateKindHandle
from ._runtime import Kind as Kind
from ._runtime import open_actor_runtime as open_actor_runtime
from ._table import CLIENT as CLIENT
from ._table import NODE as NODE
from ._table import WORKER as WORKER
from ._table import Guard as Guard
from ._table import TableError as TableError
from ._table import Transition as Transition
from ._table import TransitionTable as TransitionTable
from ._table import creation as creation
from ._table import row as row
from ._timers import DurableTimers as DurableTimers
from ._timers import Fired as Fired
from ._timers import Wake as Wake
from ._workers import WORKERS as WORKERS
from ._workers import StorageEpochSource as StorageEpochSource
from ._workers import WorkerPool as WorkerPool
from ._workers import WorkerSlots as WorkerSlots
from ._write import Change as Change
from ._write import Command as Command
from ._write import Committed as Committed
from ._write import Entry as Entry
from ._write import EventOwner as EventOwner
from ._write import Record as Record
from ._write import Rows as Rows
from ._write import Tx as Tx
from ._write import Write as Write
from ._write import WritePath as WritePath
from ._write import default_payload as default_payload
from ._write import recovery_changes as recovery_changes
