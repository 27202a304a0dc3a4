"""`machine.show` across a Control restart, through the handlers on a real SQLite file
opened twice (two Control runs): what the record says of the link, the barrier, the
assignments and the lease horizon once the restart left no link and no report yet.

Found by it and fixed: a machine with no link showed no barrier, so a reader (the typed
client) took the field's default, `true`, even where none stood (a link dropped in the
same run after its barrier cleared). The record of a machine whose lease expired, across
a restart, is in test_expiry_release.py."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from actors.machine import (
    MACHINES,
    Credential,
    MachineService,
    Place,
    authenticate_write,
    new_assignment,
    redeem_write,
)
from maia.config import UserConfig
from maia.protocol import MachineRef, SystemClock
from maia.service import ServiceContext, open_services
from maia.service._kinds import running_kind
from maia.service._machines import machine_show
from storage import open_storage
from supervision.leases import (
    MAX_TTL_MS,
    EvidenceSpool,
    MachineLeaseReport,
    MachineLeaseRequest,
    NodeStatus,
)

from .test_enrollment import _enroll

GRANT_MS = 30_000


@asynccontextmanager
async def _control(home: Path) -> AsyncIterator[ServiceContext]:
    """One Control run on `home`'s database."""
    async with (
        open_storage(home / "maia.db", clock=SystemClock(), synchronous="NORMAL") as store,
        open_services(store, clock=SystemClock(), home=home, config=UserConfig()) as services,
    ):
        yield services


def _status(machine_id: str, assignment: str, sequence: int) -> NodeStatus:
    spool = EvidenceSpool(f"{machine_id}.{assignment}").status(0)
    report = MachineLeaseReport(assignment, 1, "running", "r-1", 1, 0, spool)
    return NodeStatus(machine_id, 1, sequence, (report,))


async def _granted(ctx: ServiceContext, name: str) -> tuple[str, str]:
    """An enrolled machine (its link authenticated once) and one assignment: launched,
    granted (1, 1), confirmed by a running report."""
    out = await _enroll(ctx, name, f"e-{name}")
    now = ctx.now()
    record, secret = await ctx.store.write(lambda c: redeem_write(c, out.token, "node_x", now))
    presented = Credential(secret, 1, record.revocation_revision, record.revocation_revision)
    seen, refusal = await ctx.store.write(lambda c: authenticate_write(c, presented, now))
    assert refusal is None
    assert seen is not None  # its last_seen_ms written
    service: MachineService = await running_kind(ctx.runtime, MACHINES)
    made = new_assignment(record.machine_id, f"project_{name}", now)
    await service.assignments.ask(made.assignment_id, Place(made, record.registration))
    relay = service.relay
    await relay.on_status(NodeStatus(record.machine_id, 1, 1, ()))
    request = MachineLeaseRequest("r-1", record.machine_id, made.assignment_id, 1, "acquire")
    await relay.on_request(request)
    await relay.on_status(_status(record.machine_id, made.assignment_id, 2))
    return record.machine_id, made.assignment_id


async def _show(ctx: ServiceContext, name: str) -> Any:
    return (await machine_show(ctx, MachineRef(name))).machine


async def _nothing(frame: object) -> None:
    return None


async def test_the_machine_record_after_a_control_restart(tmp_path: Path) -> None:
    """First run: `box` granted and confirmed (no barrier), linked, then its link drops:
    the record says no barrier stands (it said `true` before). Second run, nothing linked
    yet: `box` is enrolled, last seen as before, not connected, no heartbeat or report, one
    assignment behind the restart's barrier, its horizon a maximum TTL from the start
    (later than the 30 s grant issued before the restart)."""
    home = tmp_path / "control"
    home.mkdir(mode=0o700)
    async with _control(home) as ctx:
        box, _ = await _granted(ctx, "box")
        service: MachineService = await running_kind(ctx.runtime, MACHINES)
        link = service.links.open(box, lambda: None, _nothing)
        service.relay.link_opened(link)
        shown = await _show(ctx, "box")
        assert (shown.link.connected, shown.link.barrier) == (True, False)
        service.links.drop(link, ctx.clock.monotonic_ms())
        shown = await _show(ctx, "box")
        assert (shown.link.connected, shown.link.barrier) == (False, False), shown.link
        assert 0 < (shown.link.lease_horizon_in_ms or 0) <= GRANT_MS
        before = shown.last_seen_at
    async with _control(home) as ctx:
        shown = await _show(ctx, "box")
        assert (shown.state, shown.last_seen_at) == ("enrolled", before)
        link = shown.link
        assert (link.connected, link.heartbeats, link.last_report_sequence) == (False, 0, 0)
        assert (link.barrier, link.assignments) == (True, 1), link
        assert link.last_heartbeat_age_ms is None
        assert GRANT_MS < (link.lease_horizon_in_ms or 0) <= MAX_TTL_MS, link
