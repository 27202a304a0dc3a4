"""The machine kind: the link board of this Control Node's run (and, as it grows, one
`MachineAssignmentActor` per assignment).

`MACHINES` goes in the Node's kind list; handlers and the machine listener reach its facade,
`MachineService`, as `runtime[MACHINES]`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import Any, Final

import attrs

from actors import ActorRuntime, TransitionTable

from ._links import LinkBoard


@attrs.define(eq=False)
class MachineService:
    """What handlers and the listener share: the links and the runtime they run on."""

    runtime: ActorRuntime
    links: LinkBoard = attrs.field(factory=LinkBoard)
    listening: tuple[str, int] | None = None  # the Control Node's machine listener
    execution: Any = None  # the Execution Node's link (maia.machines.ExecutionLink)


@attrs.frozen
class MachineKind:
    """The kind the runtime opens (`Kind` protocol)."""

    name: str = "machine"

    @property
    def tables(self) -> Sequence[TransitionTable[Any, Any]]:
        return ()

    @asynccontextmanager
    async def open(self, runtime: ActorRuntime) -> AsyncIterator[MachineService]:
        yield MachineService(runtime)


MACHINES: Final = MachineKind()
