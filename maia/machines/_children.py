"""The machine link as children of a Node's root tree (`NodeConfig.children`).

`control_child(host, port)`: the Control Node's listener for Execution Nodes, on an address
the user chose, apart from the loopback-only API. `execution_child(url, token)`: the
Execution Node's outgoing link. Both start after the API (rest-for-one: a restart of the
services restarts them too) and write what they listen on or hold to the Node's log.
"""

from __future__ import annotations

import logging
from typing import Any

import trio

from actors.machine import MACHINES
from maia.node import NodeServices
from supervision import ChildContext

from ._execution import ExecutionLink
from ._listener import MachineListener

log = logging.getLogger("maia.machines")
Child = tuple[str, Any]


def control_child(host: str, port: int) -> Child:
    async def start(services: NodeServices, state: Any, ctx: ChildContext, *,
                    task_status: Any) -> None:  # fmt: skip
        machines = services.sessions_or_raise().runtime[MACHINES]
        listener = MachineListener(services.storage_or_raise(), machines, services.clock)
        async with trio.open_nursery() as nursery:
            bound = await nursery.start(listener.serve, host, port)
            machines.listening = (host, bound)
            log.info("machine link listening on ws://%s:%d/machines/v1", host, bound)
            task_status.started()
            await ctx.stop_requested.wait()
            nursery.cancel_scope.cancel()

    return ("machines-listen", start)


def execution_child(control_url: str, token: str | None) -> Child:
    async def start(services: NodeServices, state: Any, ctx: ChildContext, *,
                    task_status: Any) -> None:  # fmt: skip
        store = services.storage_or_raise()
        machines = services.sessions_or_raise().runtime[MACHINES]
        link = ExecutionLink(services.config.home.root, control_url, token, store.node_id,
                             services.clock, machines.local_supervisor)  # fmt: skip
        machines.execution = link
        async with trio.open_nursery() as nursery:
            await nursery.start(link.run)
            task_status.started()
            await ctx.stop_requested.wait()
            nursery.cancel_scope.cancel()

    return ("machines-execution", start)
