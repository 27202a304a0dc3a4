"""Supervisor trees, the worker supervisor, and the sans-IO lease state machines."""

from ._child import ChildContext as ChildContext
from ._child import ChildSpec as ChildSpec
from ._child import ChildStartFailed as ChildStartFailed
from ._child import ChildStatistics as ChildStatistics
from ._child import SupervisorGaveUp as SupervisorGaveUp
from ._child import SupervisorStatistics as SupervisorStatistics
from ._restart import Action as Action
from ._restart import ChildAdded as ChildAdded
from ._restart import ChildExited as ChildExited
from ._restart import ChildRecord as ChildRecord
from ._restart import ChildStarted as ChildStarted
from ._restart import GiveUp as GiveUp
from ._restart import PolicyState as PolicyState
from ._restart import RemoveChild as RemoveChild
from ._restart import RestartPolicy as RestartPolicy
from ._restart import RestartType as RestartType
from ._restart import StartChildren as StartChildren
from ._restart import StopChildren as StopChildren
from ._restart import Strategy as Strategy
from ._restart import decide as decide
from ._supervisor import Supervisor as Supervisor
