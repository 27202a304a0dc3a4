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

The tasks run in the registry's nursery (a nursery per actor would cost every idle actor);
the scope holds their cancel scopes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import trio

from ._actor import Actor


class EffectScope:
    """The effects of one actor incarnation."""

    __slots__ = ("_actor", "_closed", "_nursery", "_scopes")

    def __init__(self, actor: Actor[Any, Any], nursery: trio.Nursery) -> None:
        self._actor = actor
        self._nursery = nursery
        self._scopes: set[trio.CancelScope] | None = None  # made at the first effect
        self._closed = False

    @property
    def live(self) -> int:
        """How many effects are running."""
        return len(self._scopes) if self._scopes is not None else 0

    def start(self, name: str, effect: Callable[[], Awaitable[Any]]) -> None:
        """Run `effect()` as a task of this actor. A no-op once the actor stopped."""
        if self._closed:
            return
        scope = trio.CancelScope()
        if self._scopes is None:
            self._scopes = set()
        self._scopes.add(scope)
        self._actor.vetoes += 1
        self._nursery.start_soon(self._run, name, effect, scope, name=f"{self._actor.name}:{name}")

    async def _run(
        self, name: str, effect: Callable[[], Awaitable[Any]], scope: trio.CancelScope
    ) -> None:
        try:
            with scope:
                await effect()
        except Exception as error:  # a bug in the effect: the actor crashes, the Node does not
            self._actor.crash(name, error)
        finally:
            assert self._scopes is not None
            self._scopes.discard(scope)
            self._actor.vetoes -= 1

    def close(self) -> None:
        """Cancel every running effect (the actor stopped); later `start`s do nothing."""
        self._closed = True
        for scope in list(self._scopes or ()):
            scope.cancel()
