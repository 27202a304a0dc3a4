"""The actor runtime (mailboxes, transition tables, registries, passivation) and the
per-aggregate actors: Session, Routine, Webhook and MachineAssignment."""

from ._actor import Actor as Actor
from ._actor import ActorState as ActorState
from ._actor import ActorStatistics as ActorStatistics
