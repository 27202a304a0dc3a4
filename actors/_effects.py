"""Per-actor effect scopes: the side effects an actor starts after a commit, owned by it.

An effect (launch a worker, stream a turn's events, call a webhook URL) runs as its own task,
so the actor keeps taking messages while it runs. It belongs to the actor that started it:
  * an effect that raises crashes that actor (never the Node, never another actor): the
    actor stops after the message in hand and its registry logs the traceback and restarts
    it from storage under the restart intensity;
  * while an actor holds a live effect its registry does not passivate it (the veto), so a
    worker's watcher keeps its Session actor in memory without any keep-alive message;
  * when the actor stops, for any reason, its effects are cancelled.
An effect that expects to fail (a worker that may not start) catches that failure itself and
tells its actor a message; only a bug should reach the scope.

The tasks run in a nursery of the actor's own, opened by one host task in the registry's
nursery at the actor's first effect and kept until the actor stops (a nursery per actor would
cost every idle actor, and a Session with a worker has a live effect all along anyway);
closing the scope cancels that nursery, and with it every effect. An effect so costs a task
and no cancel scope of its own (a scope was ~50k instructions a turn, for the turn's pump).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import trio

from ._actor import Actor


class EffectScope:
    """The effects of one actor incarnation."""

    __slots__ = ("_actor", "_closed", "_host", "_live", "_nursery", "_queued")

    def __init__(self, actor: Actor[Any, Any], nursery: trio.Nursery) -> None:
        self._actor = actor
        self._nursery = nursery  # the registry's: where the host task runs
        self._host: trio.Nursery | None = None  # the effects' nursery, once the host runs
        # Effects started before the host task opened its nursery (None: no host started).
        self._queued: list[tuple[str, Callable[[], Awaitable[Any]]]] | None = None
        self._live = 0
        self._closed = False

    @property
    def live(self) -> int:
        """How many effects are running."""
        return self._live

    def start(self, name: str, effect: Callable[[], Awaitable[Any]]) -> None:
        """Run `effect()` as a task of this actor. A no-op once the actor stopped."""
        if self._closed:
            return
        self._live += 1
        self._actor.vetoes += 1
        host = self._host
        if host is not None:
            host.start_soon(self._run, name, effect, name=f"{self._actor.name}:{name}")
        elif self._queued is not None:
            self._queued.append((name, effect))  # the host task has not run yet
        else:
            self._queued = [(name, effect)]
            self._nursery.start_soon(self._host_task, name=f"{self._actor.name}:effects")

    async def _host_task(self) -> None:
        """Hold the effects' nursery until `close` cancels it."""
        async with trio.open_nursery() as nursery:
            if self._closed:  # closed before this ran: the queued effects start cancelled,
                nursery.cancel_scope.cancel()  # as a cancelled scope of their own did
            else:
                self._host = nursery
            queued, self._queued = self._queued or [], []
            for name, effect in queued:
                nursery.start_soon(self._run, name, effect, name=f"{self._actor.name}:{name}")
            await trio.sleep_forever()

    async def _run(self, name: str, effect: Callable[[], Awaitable[Any]]) -> None:
        try:
            await effect()
        except Exception as error:  # a bug in the effect: the actor crashes, the Node does not
            self._actor.crash(name, error)
        finally:
            self._live -= 1
            self._actor.vetoes -= 1

    def close(self) -> None:
        """Cancel every running effect (the actor stopped); later `start`s do nothing."""
        self._closed = True
        host, self._host = self._host, None
        if host is not None:
            host.cancel_scope.cancel()
