"""Supervisor trees on trio: start children in order, restart them by policy, stop them in
reverse order within their shutdown timeouts.

The decisions come from `_restart.decide` (pure); this module is the plumbing. A child is
`async def child(ctx: ChildContext, *, task_status=trio.TASK_STATUS_IGNORED)`; it is ready
when it calls `task_status.started()` (or returns). Each child runs in its own shielded cancel
scope, so when the supervisor is cancelled it still stops its children one by one, last
started first. Stopping a child sets `ctx.stop_requested`; a child with `shutdown_ms > 0` has
that long to return on its own before it is cancelled; with `shutdown_ms == 0` (the default)
it is cancelled at once (its `finally` blocks still run: trio has no harsher kill).

A supervisor that gives up (restart intensity exceeded) stops every child and raises
`SupervisorGaveUp`, which its own supervisor sees as a failure of that child: escalation.
"""

from __future__ import annotations

import math
import random
from typing import Any

import trio

from maia.core import MaiaError

from ._child import (
    ChildContext,
    ChildSpec,
    ChildStartFailed,
    ChildStatistics,
    SupervisorGaveUp,
    SupervisorStatistics,
    _Child,
    _Status,
)
from ._restart import (
    ChildAdded,
    ChildExited,
    ChildStarted,
    GiveUp,
    PolicyState,
    RemoveChild,
    RestartPolicy,
    StartChildren,
    StopChildren,
    Strategy,
    decide,
)


class Supervisor:
    """A supervisor: `await nursery.start(sup.serve)`; ready once every child is ready."""

    def __init__(
        self,
        name: str,
        children: tuple[ChildSpec, ...] | list[ChildSpec] = (),
        *,
        strategy: Strategy = Strategy.ONE_FOR_ONE,
        policy: RestartPolicy | None = None,
        rng: random.Random | None = None,
        max_children: int = 10_000,
    ) -> None:
        names = [c.name for c in children]
        if len(set(names)) != len(names):
            raise ValueError(f"supervisor {name}: child names must be unique")
        self.name = name
        self._specs = {c.name: c for c in children}
        self._initial = tuple(children)
        self._policy = policy or RestartPolicy()
        self._state = PolicyState(strategy)
        self._rng = rng or random.Random()
        self._max_children = max_children
        self._live: dict[str, _Child] = {}
        self._attempts: dict[str, int] = {}
        self._pending: dict[str, tuple[float, int]] = {}  # name -> (due trio time, delay ms)
        self._exits: list[_Child] = []
        self._wake = trio.Event()
        self._nursery: trio.Nursery | None = None
        self._phase = "new"
        self._restarts = 0
        self._killed = 0

    def _now_ms(self) -> int:
        return round(trio.current_time() * 1000)

    def _apply(self, event: ChildAdded | ChildStarted | ChildExited) -> tuple[Any, ...]:
        self._state, actions = decide(self._policy, self._state, event, self._now_ms())
        return actions

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Start the children in order, supervise them until cancelled, then stop them.

        Raises `ChildStartFailed` when an initial child fails before it is ready, and
        `SupervisorGaveUp` when restarts exceed the policy's intensity.
        """
        if self._phase != "new":
            raise RuntimeError(f"supervisor {self.name} was already served")
        self._phase = "starting"
        failure: Exception | None = None
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            try:
                for spec in self._initial:
                    self._apply(ChildAdded(spec.name, spec.restart))
                    if not await self._start(spec):
                        child = self._live.get(spec.name)
                        cause = child.error if child is not None else None
                        raise ChildStartFailed(  # the cause, for the message a person reads
                            f"{self.name}/{spec.name} failed to start: {_reason(cause)}"
                        ) from cause
                self._phase = "running"
                task_status.started()
                await self._supervise()
            except (ChildStartFailed, SupervisorGaveUp) as exc:
                failure = exc  # raised bare below, not wrapped in the nursery's group
            finally:
                with trio.CancelScope(shield=True):
                    await self._stop_all()
                    self._phase = "gave_up" if failure is not None else "stopped"
        if failure is not None:
            raise failure

    async def start_child(self, spec: ChildSpec) -> None:
        """Add and start a child while serving (the dynamic strategy's way to grow).

        Raises `MaiaError` `saturated` at `max_children`, `invalid_request` for a name in
        use, `unavailable` when the supervisor is not running, and `ChildStartFailed` when
        the child fails before it is ready.
        """
        if self._phase != "running" or self._nursery is None:
            raise MaiaError("unavailable", f"supervisor {self.name} is {self._phase}",
                            {"target": self.name})  # fmt: skip
        if spec.name in self._specs:
            raise MaiaError("invalid_request", f"child {spec.name} already exists",
                            {"detail": f"child {spec.name} already exists"})  # fmt: skip
        if len(self._specs) >= self._max_children:
            raise MaiaError("saturated", f"supervisor {self.name} has {self._max_children} "
                            "children", {"detail": "max_children"})  # fmt: skip
        self._specs[spec.name] = spec
        self._apply(ChildAdded(spec.name, spec.restart))
        if not await self._start(spec):
            raise ChildStartFailed(f"{self.name}/{spec.name} failed to start")

    async def _start(self, spec: ChildSpec) -> bool:
        """Start one child and wait until it is ready; False if it failed first."""
        assert self._nursery is not None
        attempt = self._attempts.get(spec.name, 0) + 1
        self._attempts[spec.name] = attempt
        child = _Child(spec, ChildContext(spec.name, attempt))
        self._live[spec.name] = child
        self._apply(ChildStarted(spec.name))
        self._nursery.start_soon(self._run, child, name=f"{self.name}/{spec.name}")
        with trio.move_on_after(spec.ready_timeout_ms / 1000):
            await child.ready.wait()
        if child.is_ready:
            return True
        if not child.done.is_set():  # readiness timed out: treat as a failure
            child.error = TimeoutError(f"not ready within {spec.ready_timeout_ms} ms")
            await self._stop(child, report=True)
        return False

    async def _run(self, child: _Child) -> None:
        with child.scope:
            try:
                await child.spec.start(child.ctx, task_status=_Status(child))
            except Exception as exc:
                child.error = exc
        if child.error is None and not child.scope.cancelled_caught:
            child.is_ready = True  # returning normally counts as having been ready
        child.ready.set()
        child.done.set()
        if not child.stopping:
            self._exits.append(child)
            self._wake.set()

    async def _supervise(self) -> None:
        while True:
            while self._exits:
                child = self._exits.pop(0)
                if self._live.get(child.spec.name) is not child:
                    continue  # an old incarnation, already stopped or replaced
                del self._live[child.spec.name]
                failed = child.error is not None
                actions = self._apply(ChildExited(child.spec.name, failed, self._rng.random()))
                await self._perform(actions)
            now = trio.current_time()
            due = [name for name, (at, _) in self._pending.items() if at <= now]
            for name in due:
                del self._pending[name]
                if name in self._specs and name not in self._live:
                    self._restarts += 1
                    # a failed start reports itself as an exit: the policy sees it next
                    await self._start(self._specs[name])
            if due:
                continue
            next_at = min((at for at, _ in self._pending.values()), default=math.inf)
            with trio.move_on_at(next_at):
                await self._wake.wait()
            self._wake = trio.Event()

    async def _perform(self, actions: tuple[Any, ...]) -> None:
        for action in actions:
            match action:
                case StopChildren(names=names):
                    for name in names:
                        child = self._live.pop(name, None)
                        if child is not None:
                            await self._stop(child)
                case RemoveChild(name=name):
                    self._specs.pop(name, None)
                    self._pending.pop(name, None)
                case StartChildren(names=names, delay_ms=delay):
                    at = trio.current_time() + delay / 1000
                    for name in names:
                        self._pending[name] = (at, delay)
                case GiveUp(reason=reason):
                    raise SupervisorGaveUp(f"supervisor {self.name} gave up: {reason}")

    async def _stop(self, child: _Child, *, report: bool = False) -> None:
        """Ask, wait up to the shutdown timeout, then cancel. `report`: count as an exit."""
        child.stopping = not report
        child.ctx.stop_requested.set()
        if child.spec.shutdown_ms > 0:
            with trio.move_on_after(child.spec.shutdown_ms / 1000):
                await child.done.wait()
        if not child.done.is_set():
            if child.spec.shutdown_ms > 0:
                self._killed += 1
            child.scope.cancel()
            await child.done.wait()

    async def _stop_all(self) -> None:
        self._phase = "stopping"
        self._pending.clear()
        order = [c.name for c in reversed(self._state.children)]
        live = [self._live.pop(n) for n in order if n in self._live]
        live += list(self._live.values())
        self._live.clear()
        if self._state.strategy is Strategy.DYNAMIC:
            async with trio.open_nursery() as nursery:  # many like children: all at once
                for child in live:
                    nursery.start_soon(self._stop, child)
            return
        for child in live:
            await self._stop(child)

    def statistics(self) -> SupervisorStatistics:
        """A frozen snapshot: phase, restarts, and each child's restarts and backoff."""
        children = tuple(
            ChildStatistics(
                name=r.name,
                restart=r.restart,
                running=r.name in self._live,
                restarts=r.restarts,
                consecutive_failures=r.failures,
                backoff_ms=self._pending.get(r.name, (0.0, 0))[1],
            )
            for r in self._state.children
        )
        return SupervisorStatistics(
            name=self.name,
            state=self._phase,
            strategy=self._state.strategy,
            restarts=self._restarts,
            killed=self._killed,
            children=children,
        )


def _reason(error: BaseException | None) -> str:
    if error is None:
        return "it exited before it was ready"
    return getattr(error, "message", None) or str(error) or type(error).__name__
