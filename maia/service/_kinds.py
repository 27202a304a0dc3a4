"""The kinds of aggregate the Node runs, in start order; three of them open on demand.

A kind may use what an earlier one provides (the Session kind runs on the worker pool).
Adding a kind is one line here; the runtime starts it and the journal's event types
(`_event_types`) take its tables' events from here (`kind_event_types`), so nothing else
lists the kinds.

The machine, webhook and routine kinds are `OnDemand`: a Node opens one at its start when
the kind's tables hold work (a row; for webhooks an active webhook, the only kind of webhook
with deliveries to send or events to take: removed ones stay, and would open the kind at
every start for nothing; or an attempt a dead Node left in flight), so recovery finds every
assignment, delivery and routine with work and resumes it before the Node serves, else at
the first operation that needs it (`running_kind`, which every handler of the kind goes
through). Until then the kind's modules are never imported: about 2.3 MiB of an idle Node.
Their events are declared here (`emits`); a test holds each list to the kind's tables.
"""

from __future__ import annotations

import importlib
import sqlite3
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from contextlib import asynccontextmanager
from typing import Any, Final, TypeVar

import attrs
import trio

from actors import WORKERS, ActorRuntime, Kind, TransitionTable, WorkerPool
from actors.session import SESSIONS
from maia.core import MaiaError

T = TypeVar("T")


@attrs.frozen
class OnDemand:
    """A kind opened at the start when `holds` (its tables, each maybe with a WHERE that
    names the rows that are work) or its durable timers have a row, else on its first use;
    `source` is where the kind is (`module:attribute`)."""

    name: str
    source: str
    holds: tuple[str, ...]
    emits: frozenset[str]
    places_workers: bool = False  # the machine kind: it wraps the pool's supervisor

    def load(self) -> Kind[Any]:
        module, _, attribute = self.source.partition(":")
        kind: Kind[Any] = getattr(importlib.import_module(module), attribute)
        return kind

    @property
    def tables(self) -> Sequence[TransitionTable[Any, Any]]:
        return self.load().tables

    def has_work(self, conn: sqlite3.Connection) -> bool:
        probes = [f"EXISTS (SELECT 1 FROM {table})" for table in self.holds]
        probes.append("EXISTS (SELECT 1 FROM actor_timers WHERE kind = ?)")
        return bool(conn.execute(f"SELECT {' OR '.join(probes)}", (self.name,)).fetchone()[0])

    @asynccontextmanager
    async def open(self, runtime: ActorRuntime) -> AsyncIterator[None]:
        """Yields None (the runtime then has no facade for it) and opens the kind now or
        later (`running_kind`); it closes in this kind's turn, in reverse start order."""
        placement = _Placement.install(runtime) if self.places_workers else None
        opener = _Opener(self, runtime, placement)
        runtime.extensions.setdefault(_Openers, _Openers())[self.name] = opener
        try:
            async with trio.open_nursery() as nursery:
                opener.nursery = nursery
                if await runtime.store.read(self.has_work):
                    await opener.open()
                try:
                    yield None
                finally:
                    opener.close()
        finally:
            if placement is not None:
                placement.pool.supervisor = placement.inner


class _Openers(dict[str, "_Opener"]):
    """The runtime's on-demand kinds by name (a runtime extension)."""


class _Opener:
    """Opens one on-demand kind once, in its wrapper's nursery, and closes it on request."""

    def __init__(self, spec: OnDemand, runtime: ActorRuntime,
                 placement: _Placement | None) -> None:  # fmt: skip
        self.spec = spec
        self.runtime = runtime
        self.placement = placement
        self.nursery: trio.Nursery | None = None
        self.after_open: list[Callable[[], None]] = []
        self._lock = trio.Lock()
        self._closing = trio.Event()
        self.opened = False

    async def open(self) -> None:
        async with self._lock:
            if self.opened:
                return
            if self.nursery is None or self._closing.is_set():
                raise MaiaError("unavailable", f"{self.spec.name}s are not running",
                                {"target": self.spec.name})  # fmt: skip
            await self.nursery.start(self._run)
            self.opened = True

    def close(self) -> None:
        self._closing.set()

    async def _run(self, *, task_status: trio.TaskStatus[None]) -> None:
        kind = self.spec.load()
        placement = self.placement
        if placement is not None:  # the machine kind wraps the local supervisor
            placement.pool.supervisor = placement.inner
        try:
            async with kind.open(self.runtime) as facade:
                if placement is not None:
                    placement.take_over()
                self.runtime.publish(kind.name, facade)
                try:
                    for hook in self.after_open:
                        hook()
                    task_status.started()
                    await self._closing.wait()
                finally:
                    self.runtime.publish(kind.name, None)
                    if placement is not None:
                        placement.hand_back()
        finally:
            if placement is not None:
                placement.pool.supervisor = placement  # type: ignore[assignment]


class _Placement:
    """The worker pool's supervisor while the machine kind may open later. The Session kind
    keeps the supervisor it found at its open, so this one stays for the Node's run: a
    worker starts through the machine kind's placing supervisor once that is open (a
    Session placed on a machine runs there), else on the local one (`inner`)."""

    def __init__(self, pool: WorkerPool) -> None:
        self.pool = pool
        self.inner = pool.supervisor  # named as the placing supervisor's (MachineService)
        self.placing: Any = None

    @classmethod
    def install(cls, runtime: ActorRuntime) -> _Placement:
        placement = cls(runtime.extension(WorkerPool))
        placement.pool.supervisor = placement  # type: ignore[assignment]
        return placement

    def take_over(self) -> None:
        """The machine kind opened: its placing supervisor is in the pool; route to it."""
        self.placing, self.pool.supervisor = self.pool.supervisor, self  # type: ignore[assignment]

    def hand_back(self) -> None:
        """The machine kind closes: give it back the pool as it left it."""
        self.placing, self.pool.supervisor = None, self.inner

    def _current(self) -> Any:
        return self.inner if self.placing is None else self.placing

    async def start_worker(self, spec: Any) -> Any:
        return await self._current().start_worker(spec)

    def live(self) -> list[Any]:
        return list(self._current().live())

    async def stop_all(self, reason: str = "supervisor stopping") -> None:
        await self._current().stop_all(reason)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


async def running_kind(runtime: ActorRuntime, kind: Kind[T]) -> T:
    """The facade of `kind`, opening it first when it is an on-demand kind not open yet.
    Raises `unavailable` when the runtime does not run it."""
    if kind not in runtime:
        opener = runtime.extensions.get(_Openers, {}).get(kind.name)
        if opener is not None:
            await opener.open()
    return runtime[kind]


def after_open(runtime: ActorRuntime, name: str, hook: Callable[[], None]) -> None:
    """Call `hook` once the on-demand kind `name` is open (now, when it is already)."""
    opener = runtime.extensions.get(_Openers, {}).get(name)
    if opener is None:
        return
    opener.after_open.append(hook)
    if opener.opened:
        hook()


def is_open(runtime: ActorRuntime, name: str) -> bool:
    """Whether the on-demand kind `name` is open (for tests and node.status)."""
    opener = runtime.extensions.get(_Openers, {}).get(name)
    return opener is not None and opener.opened


_MACHINES: Final = OnDemand(
    "machine", "actors.machine:MACHINES",
    ("machines", "machine_assignments", "machine_placements"), frozenset(),
    places_workers=True,
)  # fmt: skip
_WEBHOOKS: Final = OnDemand(
    "webhook", "actors.webhook:WEBHOOKS",
    # Pending deliveries are an active webhook's (a remove or a 410 cancels them): an
    # active webhook is work (`webhooks_by_state`: one index probe). So is an attempt a
    # stopped Node left `sending` after its webhook stopped being active (the last webhook
    # removed mid-attempt): the kind's recovery settles it `unknown`. Its delivery was
    # pending when the remove came, so it is cancelled: the probe walks only the cancelled
    # deliveries of webhooks that are not active (indexes all the way), not every attempt.
    ("webhooks WHERE state = 'active'",
     "webhooks w JOIN webhook_deliveries d ON d.webhook_id = w.webhook_id"
     " AND d.state = 'cancelled' JOIN webhook_attempts a ON a.delivery_id = d.delivery_id"
     " AND a.outcome = 'sending' WHERE w.state IN ('removed', 'disabled')"),
    frozenset({"webhook.added", "webhook.disabled", "webhook.redelivery_requested",
               "webhook.removed", "webhook.tested"}),
)  # fmt: skip
_ROUTINES: Final = OnDemand(
    "routine", "actors.routine:ROUTINES", ("routines", "routine_fires"),
    frozenset({"routine.disabled", "routine.fire_failed", "routine.fire_launching",
               "routine.fire_requested", "routine.fire_saturated", "routine.fire_skipped",
               "routine.fire_started", "routine.paused", "routine.resumed",
               "routine.run_requested", "routine.slot_claimed"}),
)  # fmt: skip
ON_DEMAND: Final = {kind.name: kind for kind in (_MACHINES, _WEBHOOKS, _ROUTINES)}

KINDS: Final[tuple[Kind[Any], ...]] = (WORKERS, _MACHINES, SESSIONS, _WEBHOOKS, _ROUTINES)


def _emits(tables: Iterable[TransitionTable[Any, Any]]) -> Iterable[str]:
    for table in tables:
        rows = (*table.rows, table.creation) if table.creation else table.rows
        yield from (row.emits for row in rows if row.emits)


def kind_event_types() -> frozenset[str]:
    """Every event the kinds' lifecycle tables emit (the on-demand kinds' as declared)."""
    eager = (t for kind in KINDS if not isinstance(kind, OnDemand) for t in kind.tables)
    declared = (t for kind in ON_DEMAND.values() for t in kind.emits)
    return frozenset(_emits(eager)) | frozenset(declared)
