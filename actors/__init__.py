"""The actor runtime (mailboxes, transition tables, registries, passivation) and the
per-aggregate actors: Session, Routine, Webhook and MachineAssignment."""

from ._actor import Actor as Actor
from ._actor import ActorState as ActorState
from ._actor import ActorStatistics as ActorStatistics
from ._aggregate import Change as Change
from ._aggregate import Lifecycle as Lifecycle
from ._aggregate import Persist as Persist
from ._aggregate import Store as Store
from ._lifecycles import SESSION_TABLE as SESSION_TABLE
from ._lifecycles import TABLES as TABLES
from ._lifecycles import TURN_TABLE as TURN_TABLE
from ._lifecycles import SessionEvent as SessionEvent
from ._lifecycles import SessionState as SessionState
from ._lifecycles import TurnEvent as TurnEvent
from ._lifecycles import TurnState as TurnState
from ._registry import ActorRegistry as ActorRegistry
from ._registry import RegistryStatistics as RegistryStatistics
from ._table import Guard as Guard
from ._table import TableError as TableError
from ._table import Transition as Transition
from ._table import TransitionTable as TransitionTable
from ._table import row as row
