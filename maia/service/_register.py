"""Installing the handlers into the Node's dispatcher, and opening what they run on.

`register(table, context_of)` adds one entry per operation to a `HandlerTable`; `context_of`
finds the `ServiceContext` from a call (the Node keeps it on its services bundle). Operations
that already have a handler are left alone, so registering twice (two Nodes in one test
process) is harmless. The handlers of the kinds opened on demand (`_kinds`: machines,
routines, webhooks) are imported at their first call (`_deferred`), and each opens its kind.
"""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final, Protocol

from actors import ActorError, open_actor_runtime
from maia.config import UserConfig, load_user_config
from maia.protocol import REGISTRY, Clock, MaiaError
from storage import Storage
from supervision.workers import DiagnosticsSink, WorkerTimings

from ._admitted import AdmittedConfigs
from ._approvals import APPROVAL_HANDLERS
from ._config import CONFIG_HANDLERS
from ._config_status import admitted_user_config
from ._context import ServiceContext
from ._kinds import KINDS, ON_DEMAND, after_open, running_kind
from ._projects import project_add, project_list, project_show
from ._records import events_read, receipt_get, receipt_list
from ._reference import reference_resolve
from ._refusal_details import completed_refusal
from ._sessions import (
    session_archive,
    session_create,
    session_list,
    session_rename,
    session_show,
    session_stop,
    session_wait,
)
from ._turns import (
    turn_cancel,
    turn_interrupt,
    turn_list,
    turn_queue_list,
    turn_send,
    turn_show,
    turn_wait,
)

Handler = Callable[[ServiceContext, Any], Awaitable[Any]]
# The handler modules of the kinds opened on demand: their operations by ID prefix (a test
# holds each table to its module's), imported at the first call.
_DEFERRED: Final = (("routine.", "routine", "._routines", "ROUTINE_HANDLERS"),
                    ("webhooks.", "webhook", "._webhooks", "WEBHOOK_HANDLERS"),
                    ("machine.", "machine", "._machines", "MACHINE_HANDLERS"))  # fmt: skip


def _deferred(op_id: str, kind: str, module: str, table: str) -> Handler:
    async def call(ctx: ServiceContext, params: Any) -> Any:
        await running_kind(ctx.runtime, ON_DEMAND[kind])
        handlers = getattr(importlib.import_module(module, __package__), table)
        return await handlers[op_id](ctx, params)

    call.__name__ = op_id.replace(".", "_")
    return call


HANDLERS: Final[Mapping[str, Handler]] = {
    "project.add": project_add,
    "project.list": project_list,
    "project.show": project_show,
    "session.create": session_create,
    "session.list": session_list,
    "session.show": session_show,
    "session.wait": session_wait,
    "session.stop": session_stop,
    "session.archive": session_archive,
    "session.rename": session_rename,
    "reference.resolve": reference_resolve,
    "turn.send": turn_send,
    "turn.wait": turn_wait,
    "turn.show": turn_show,
    "turn.list": turn_list,
    "turn.queue.list": turn_queue_list,
    "turn.cancel": turn_cancel,
    "turn.interrupt": turn_interrupt,
    "receipt.get": receipt_get,
    "receipt.list": receipt_list,
    "events.read": events_read,
    **CONFIG_HANDLERS,
    **APPROVAL_HANDLERS,
    **{op.operation_id: _deferred(op.operation_id, kind, module, table)
       for prefix, kind, module, table in _DEFERRED
       for op in REGISTRY if op.operation_id.startswith(prefix)},
}  # fmt: skip


class _Table(Protocol):
    def handler(self, op_id: str) -> Callable[[Any], Any]: ...

    def get(self, op_id: str) -> Any: ...


def register(table: _Table, context_of: Callable[[Any], ServiceContext]) -> None:
    """Install every handler of this package into `table` (skipping ops already served)."""
    for op_id, function in HANDLERS.items():
        if table.get(op_id) is not None:
            continue

        def bind(fn: Handler, op_id: str) -> Callable[[Any, Any], Awaitable[Any]]:
            async def serve(call: Any, params: Any) -> Any:
                try:
                    return await fn(context_of(call), params)
                except ActorError as error:  # the runtime's typed errors meet the wire here
                    raise completed_refusal(error.to_wire(), op_id, params) from None
                except MaiaError as error:
                    raise completed_refusal(error, op_id, params) from None

            serve.__name__ = fn.__name__
            return serve

        table.handler(op_id)(bind(function, op_id))


@asynccontextmanager
async def open_services(
    store: Storage,
    *,
    clock: Clock,
    home: Path,
    config: UserConfig | None = None,
    environ: Mapping[str, str] | None = None,
    timings: WorkerTimings | None = None,
    live: Callable[[str, str, str, str, str, str], None] | None = None,
    options: Mapping[str, Any] | None = None,
    diagnostics: DiagnosticsSink | None = None,
) -> AsyncIterator[ServiceContext]:
    """Run on the admitted user configuration (else `config` when given, else
    `home/config.jsonc` for a home never admitted), recover and run the actor runtime with
    every kind, and yield the handlers' context; `live` gets the Sessions' live item records
    (the observation hub), `diagnostics` the workers' observation-batches (the hub's
    recorder); `options` are more kinds' settings (tests: a webhook client).
    Raises `configuration_invalid`."""
    settings = await admitted_user_config(store)
    if settings is None:
        settings = config if config is not None else load_user_config(home / "config.jsonc")
    admitted = AdmittedConfigs(store, settings)
    settings_of_kinds = {"worker_timings": timings, "live": live, "config_of": admitted.of,
                         "diagnostics": diagnostics, **(options or {})}  # fmt: skip
    async with open_actor_runtime(
        store, clock=clock, config=settings, kinds=KINDS, environ=environ,
        options=settings_of_kinds,
    ) as runtime:  # fmt: skip
        context = ServiceContext(store, clock, settings, runtime, home, admitted)
        after_open(runtime, "routine", lambda: _install_launcher(context))
        yield context


def _install_launcher(context: ServiceContext) -> None:
    importlib.import_module("._routines", __package__).install_launcher(context)
