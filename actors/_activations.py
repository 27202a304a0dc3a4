"""The concurrent-activation limit (maxConcurrentActivations): turns running at once.

A Session holds one activation from its turn's dispatch to that turn's end, counted on the
Node (the user's limit) and in its Project (the Project's limit, never above the user's).
A Session that finds no free activation waits in line; a freed activation goes to the
first waiting Session whose limits allow it (fair order across Sessions: the line is by
the time each started waiting, and a Session whose turn ends while others wait goes to the
back instead of dispatching its next turn at once). Granting reserves the activation for
the Session, which is then told to dispatch. Limits travel with each request, so an
admitted change applies to the next request without a restart.

Plain bookkeeping on the trio thread: no I/O, no waiting; the actors do the telling.
"""

from __future__ import annotations

from typing import Literal

import attrs

Scope = Literal["node", "project"]


@attrs.frozen
class Wanted:
    """What a waiting Session asked for: its Project and the limits of its request."""

    project_id: str
    node_limit: int
    project_limit: int


@attrs.frozen
class Held:
    """Why a Session waits: the limit that is full (node or project) and its value."""

    scope: Scope
    limit: int


class ActivationSlots:
    """Activations held and the line of Sessions waiting for one (see the module)."""

    def __init__(self) -> None:
        self.used = 0
        self.by_project: dict[str, int] = {}
        self.holders: dict[str, str] = {}  # Session -> its Project
        self.waiting: dict[str, Wanted] = {}  # in the order they started waiting

    def holds(self, owner: str) -> bool:
        return owner in self.holders

    def others_waiting(self, owner: str) -> bool:
        return any(waiter != owner for waiter in self.waiting)

    def request(self, owner: str, wanted: Wanted) -> tuple[bool, list[str]]:
        """Ask for an activation: (granted to `owner`, other Sessions granted meanwhile and
        to be told). An earlier Session in line that fits is served first."""
        if owner in self.holders:
            return True, []
        # The newest limits hold for the whole line (the user's for everyone, a Project's
        # for its Sessions), so a Session asking later never passes one on stale limits.
        for waiter, old in self.waiting.items():
            same = old.project_id == wanted.project_id
            limit = wanted.project_limit if same else min(old.project_limit, wanted.node_limit)
            self.waiting[waiter] = Wanted(old.project_id, wanted.node_limit, limit)
        self.waiting[owner] = wanted  # a Session already in line keeps its place
        granted = self._grant()
        mine = owner in granted
        return mine, [g for g in granted if g != owner]

    def release(self, owner: str) -> list[str]:
        """Give `owner`'s activation back (and its place in line); returns the Sessions it
        went to, to be told."""
        self.waiting.pop(owner, None)
        project = self.holders.pop(owner, None)
        if project is None:
            return []
        self.used -= 1
        left = self.by_project[project] - 1
        if left:
            self.by_project[project] = left
        else:
            del self.by_project[project]
        return self._grant()

    def forget(self, owner: str) -> None:
        """`owner` no longer waits (nothing to dispatch any more)."""
        self.waiting.pop(owner, None)

    def held_by(self, owner: str) -> Held | None:
        """Why `owner` waits, or None when it does not."""
        wanted = self.waiting.get(owner)
        if wanted is None:
            return None
        if self.used >= wanted.node_limit:
            return Held("node", wanted.node_limit)
        return Held("project", wanted.project_limit)

    def _fits(self, wanted: Wanted) -> bool:
        in_project = self.by_project.get(wanted.project_id, 0)
        return self.used < wanted.node_limit and in_project < wanted.project_limit

    def _grant(self) -> list[str]:
        granted = []
        for owner, wanted in list(self.waiting.items()):
            if not self._fits(wanted):
                continue
            del self.waiting[owner]
            self.holders[owner] = wanted.project_id
            self.used += 1
            self.by_project[wanted.project_id] = self.by_project.get(wanted.project_id, 0) + 1
            granted.append(owner)
        return granted
