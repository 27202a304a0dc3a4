"""A Session's share of the Node's capacity: its live-Session slot (maxLiveSessions) and
its activation (maxConcurrentActivations).

A turn dispatches only with an activation, else it stays queued, in line, and
`ActivationFree` dispatches it later; a worker starts only with a slot, and a slot given back
is handed on to the Session waiting longest (`Resume`).
"""

from __future__ import annotations

import logging

from actors._activations import Wanted
from actors._errors import ActorError
from maia.core import MaiaError

from . import _queue as q
from ._actor import SessionCore
from ._messages import ActivationFree, Resume

log = logging.getLogger("maia.session")


class Capacity:
    """Takes, holds and gives back the Session's slot and activation."""

    def __init__(self, core: SessionCore) -> None:
        self.core = core
        self.holds_slot = False

    def need_slot(self, actions: tuple[q.QueueAction, ...]) -> bool:
        """Take a live-Session slot if `actions` start a worker; False if none is free
        (maxLiveSessions: the user's on the Node, the Project's in its Project)."""
        if self.holds_slot or not any(isinstance(a, q.StartWorker) for a in actions):
            return True
        node = self.core.config.user.capacity.max_live_sessions
        mine = self.core.config.limits.max_live_sessions
        if not self.core.ctx.slots.try_acquire(self.core.memory.project_id, node, mine):
            return False
        self.holds_slot = True
        return True

    def release_slot(self) -> None:
        """Give the live-Session slot back (the caller hands it on when it should)."""
        if self.holds_slot:
            self.holds_slot = False
            self.core.ctx.slots.release(self.core.memory.project_id)

    def settle_slot(self) -> None:
        """Give the slot back once no worker runs or is wanted."""
        if self.holds_slot and self.core.queue.worker is q.Worker.NONE:
            self.release_slot()
            waiting = self.core.ctx.slots.next_waiting()
            if waiting is not None:  # hand the slot on: that Session's turns wait for it
                self.core.tell_other(waiting, Resume())

    def step(self, event: q.QueueEvent, now: int) -> q.Step:
        """`q.step` under the activation limit: a turn dispatches only with an activation,
        else it stays queued, in line, and `ActivationFree` dispatches it later. A Session
        whose turn ends while others wait goes to the back of the line (fair order)."""
        slots = self.core.ctx.activations
        ending = isinstance(event, q.TurnEnded) and slots.holds(self.core.session_id)
        if ending and slots.others_waiting(self.core.session_id):
            self.release_activation()
        after, actions = q.step(self.core.queue, event, now)
        if not any(isinstance(a, q.Dispatch) for a in actions) or self.take_activation():
            return after, actions
        return q.step(self.core.queue, event, now, may_dispatch=False)

    def may_dispatch(self) -> bool:
        """For a step run elsewhere (the send batch's writer thread): whether a turn may
        dispatch now, taking an activation when one could (released after the commit when
        nothing dispatched)."""
        queue = self.core.queue
        if queue.active is not None or queue.closed or queue.worker is not q.Worker.READY:
            return True  # nothing dispatches from here without a new step of ours
        return self.take_activation()

    def take_activation(self) -> bool:
        """Hold an activation (or wait in line for one). Sessions granted meanwhile are told."""
        wanted = Wanted(
            self.core.memory.project_id,
            self.core.config.user.capacity.max_concurrent_activations,
            self.core.config.limits.max_concurrent_activations,
        )
        mine, others = self.core.ctx.activations.request(self.core.session_id, wanted)
        self._tell_granted(others)
        return mine

    def release_activation(self) -> None:
        self._tell_granted(self.core.ctx.activations.release(self.core.session_id))

    def settle_activation(self) -> None:
        """After each change: hold the activation only while a turn runs; wait in line only
        while a turn could dispatch."""
        queue = self.core.queue
        if queue.active is not None:
            return
        slots = self.core.ctx.activations
        wants = bool(queue.queued) and queue.worker is q.Worker.READY and not queue.closed
        if slots.holds(self.core.session_id):
            if wants:  # granted and not used yet: use it now
                self.core.effect("activation", self._tell_activation_free)
            else:
                self.release_activation()
        elif not wants:
            slots.forget(self.core.session_id)

    async def _tell_activation_free(self) -> None:
        try:
            await self.core.ctx.tell(self.core.session_id, ActivationFree())
        except (MaiaError, ActorError) as error:
            log.warning("session %s: ActivationFree not delivered: %r", self.core.session_id,
                        error)  # fmt: skip

    def _tell_granted(self, owners: list[str]) -> None:
        for owner in owners:
            self.core.tell_other(owner, ActivationFree())
