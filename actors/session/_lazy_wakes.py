"""The Session's per-turn timers, armed lazily: a timer row only when none fires sooner.

A turn's wall time (armed at its dispatch, moot at its end) and the idle worker's release
(armed when the queue goes idle) would each write a timer row in every turn's two
transactions. Instead the draft remembers the row it has armed (`armed`: its due) and the
deadline it means now (`wanted`: due and subject). Arming a deadline no sooner than the
armed row's writes nothing; a turn's end leaves its wall-time row in place. When a row
fires before what is wanted now, the actor re-arms it for that deadline (`refire`), so the
bound is kept: a timer fires at or before each deadline, never after it. The rows mean
nothing across a Node restart (recovery drops every Session timer), and a Session loaded
from storage knows of no row, so its first arm writes one (arming replaces a row).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from actors._timers import Fired, Wake

from ._messages import IDLE_RELEASE, WALL_TIME

if TYPE_CHECKING:
    from ._store import Draft

LAZY = frozenset({WALL_TIME, IDLE_RELEASE})


def lazy_wake(draft: Draft, timer: Wake) -> bool:
    """Note `timer` in the draft; True when its row must be written now (a row armed
    earlier fires no later, or a cancel of a lazy name leaves the row to fire as a no-op)."""
    if timer.name not in LAZY:
        return True
    if timer.cancel:
        draft.wanted.pop(timer.name, None)
        return False
    due = timer.due_wall_ms(draft.now)
    draft.wanted[timer.name] = (due, timer.subject)
    armed = draft.armed.get(timer.name)
    if armed is not None and armed <= due:
        return False
    draft.armed[timer.name] = due
    return True


def refire(draft: Draft, fired: Fired, now_ms: int) -> Wake | None:
    """A lazy row fired (the timer service deletes it): the Wake to arm again when the
    deadline wanted now is still ahead, else None (handle the firing now)."""
    draft.armed.pop(fired.name, None)
    wanted = draft.wanted.get(fired.name)
    if wanted is None or wanted[0] <= now_ms:
        return None
    due, subject = wanted
    return Wake(fired.name, at_wall_ms=due, subject=subject)


def subject_now(draft: Draft, fired: Fired) -> str | None:
    """The turn a wall-time firing is about: the one wanted now (the row may name an earlier
    turn), or the row's own subject when this memory armed nothing (reloaded)."""
    wanted = draft.wanted.get(fired.name)
    return fired.subject_id if wanted is None else wanted[1]


def worker_gone(draft: Draft) -> list[Wake]:
    """With no worker, no per-turn deadline is meant: the cancels of the rows still armed."""
    draft.wanted.clear()
    cancels = [Wake(name, cancel=True) for name in draft.armed]
    draft.armed.clear()
    return cancels
