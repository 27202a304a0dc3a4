"""Run one Invocation against a connected client: resolve references, confirm, call, print.

`execute(invocation, client, stdout=..., stderr=..., interactive=...) -> exit code`. It is
written on anyio only (no trio- or asyncio-specific call), so the CLI runs it under trio and
the console under asyncio. Data goes to `stdout`, messages and progress to `stderr`. The
client needs one method, `await client.request(op_id, params) -> wire result` (the SDK's
`MaiaClient.request`), so tests can pass a fake for ops no Node serves yet.

Conveniences (see `_waits.py`): `turn send --wait`, `session wait --timeout`,
`turn wait --timeout`, `events read --follow`, `turn show --full` (`_turn_full.py`);
`turn send --file PATH` (`_text_file.py`).
Consequential ops (`confirmation: required`, spec: preview, then confirm with the input
digest and proof) are previewed, summarised and confirmed here.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Final, Protocol, TextIO

import anyio

from maia.protocol import REGISTRY, MaiaError, Registry, check

from . import _exit
from ._flags import FROM_FILE
from ._invocation import Invocation
from ._output import Out as Out
from ._output import now_ms as now_ms
from ._output import run_local
from ._refs import Ambiguous as Ambiguous
from ._refs import ambiguous_exit, naming_field, reference_slots, resolved_id, with_ids


class Requester(Protocol):
    """What `execute` needs of a client (the SDK's `MaiaClient` is one)."""

    async def request(self, method: str, params: dict[str, Any] | None = None) -> Any: ...


# The routine ops whose template may take its Project from the current directory.
_ROUTINE_CREATES: Final = frozenset({"routine.create.preview", "routine.create.confirm"})


class Refused(Exception):
    """The person (or the lack of a terminal) declined a confirmation (exit 1); with --json
    the one document is a `confirmation_required` error naming `operation_id`."""

    def __init__(self, message: str, operation_id: str) -> None:
        super().__init__(message)
        self.operation_id = operation_id

    def as_error(self) -> MaiaError:
        return MaiaError("confirmation_required", str(self), {"method": self.operation_id})


async def resolve(client: Requester, reference: str, kind: str, path: str) -> str:
    """The exact ID a human reference (typed for the field `path`) names. Raises Ambiguous
    or MaiaError (`resource_not_found` naming `path`)."""
    try:
        answer = await client.request("reference.resolve", {"reference": reference, "kind": kind})
    except MaiaError as error:
        raise naming_field(error, path) from None
    return resolved_id(answer, reference, kind)


async def resolve_references(client: Requester, invocation: Invocation) -> dict[str, Any]:
    """The invocation's params with every reference (a wire field or a dotted path into
    nested objects: `template.projectId`) replaced by its exact ID; a whole ID asks nothing
    of the Node (`is_exact_id`)."""
    slots = reference_slots(dict(invocation.params), invocation.references)
    ids = {path: await resolve(client, text, kind, path) for path, kind, text in slots}
    return with_ids(dict(invocation.params), ids)


async def call(client: Requester, op_id: str, params: dict[str, Any], out: Out) -> Any:
    """One request, with a progress note on stderr if it takes over a second."""
    async with progress(out, op_id):
        return await client.request(op_id, params)


@asynccontextmanager
async def progress(out: Out, label: str, after_s: float = 1.0) -> AsyncIterator[None]:
    """Say on stderr what we wait for once it has taken more than `after_s` seconds, unless
    data has already been printed (a streamed reply)."""

    async def note() -> None:
        await anyio.sleep(after_s)
        if not out.wrote_data:  # text is already flowing: nothing to reassure about
            out.stderr.write(f"maia: waiting for {label}…\n")
            out.stderr.flush()

    failure: Exception | None = None
    async with anyio.create_task_group() as group:
        group.start_soon(note)
        try:
            yield
        except Exception as error:  # re-raised below, unwrapped by the task group
            failure = error
        finally:
            group.cancel_scope.cancel()
    if failure is not None:
        raise failure


async def execute(
    invocation: Invocation,
    client: Requester | None,
    *,
    stdout: TextIO,
    stderr: TextIO,
    interactive: bool,
    registry: Registry = REGISTRY,
    confirm: Callable[[str], Any] | None = None,
    owns_sigint: bool = False,
) -> int:
    """Run the invocation and return its exit code (see `_exit`). Never raises MaiaError.

    `client` may be None for local invocations (help, schema). `confirm(prompt) -> bool`
    asks the person (default: click.confirm on the terminal) when `interactive`.
    `owns_sigint`: the caller leaves SIGINT to this command (the CLI does; the console
    keeps it and cancels the command), so `events read --follow` may catch it to stop
    between pages and print its cursor.
    """
    out = Out(stdout, stderr, invocation.output)
    if invocation.local:
        return run_local(invocation, out)
    assert invocation.operation_id is not None
    assert client is not None
    op = registry.get(invocation.operation_id)
    if op is None:
        out.message(f"no operation named {invocation.operation_id}")
        return _exit.USAGE
    from . import _confirm, _waits

    try:
        text = None
        if invocation.text_file is not None:  # read first: a bad file asks nothing of the Node
            from ._text_file import max_characters, read_text_file_async

            limit = max_characters(op, FROM_FILE[op.operation_id])
            text = await read_text_file_async(invocation.text_file, limit)
        params = await resolve_references(client, invocation)
        if text is not None:
            params[FROM_FILE[op.operation_id]] = text
        if invocation.operation_id == "session.create" and "projectId" not in params:
            params["projectId"] = await _waits.current_project(client, out)
        template = params.get("template")
        if (invocation.operation_id in _ROUTINE_CREATES and isinstance(template, dict)
                and "projectId" not in template):  # fmt: skip
            # The cwd's Project, as session create takes it, but only one that exists: a
            # preview (--dry-run) must add nothing; without one the Node names the field.
            found = await _waits.found_project(client)
            if found is not None:
                params["template"] = {**template, "projectId": found}
        if op.input_type is not None and not _confirm.previews_first(op, params):
            check(op.input_type, params)  # refuse locally what the Node would refuse
        if op.confirmation == "required":
            return await _confirm.confirmed(client, op, params, invocation, out, interactive,
                                            confirm, registry)  # fmt: skip
        if invocation.operation_id == "session.wait":
            return await _waits.session_wait(client, params, invocation, out)
        if invocation.operation_id == "turn.wait":
            return await _waits.turn_wait(client, params, invocation, out)
        if invocation.operation_id == "session.attach":
            from ._stream import attach

            return await attach(client, params, invocation.timeout_s, out)
        if invocation.operation_id == "observe.events":
            from ._observe_cmd import observe

            return await observe(client, params, invocation.timeout_s, out)
        if invocation.operation_id == "events.read" and invocation.follow:
            return await _waits.follow_events(client, params, invocation, out, owns_sigint)
        if invocation.operation_id == "turn.show" and invocation.full:
            from ._turn_full import show_full

            return await show_full(client, params, out)
        if invocation.operation_id == "turn.send" and invocation.wait:
            return await _waits.send_and_wait(client, params, invocation, out)
        if invocation.operation_id == "node.hello":  # a connection says hello once
            from ._hello_cmd import hello_anew

            async with progress(out, "node.hello"):
                result = await hello_anew(client, params)
        else:
            result = await call(client, invocation.operation_id, params, out)
        if _exit.unserved_cursor(invocation.operation_id, result):
            # A result, but nothing was read: --jsonl prints the result itself as its line
            # (its empty event list would print nothing), and the exit is 1.
            if out.fmt == "jsonl":
                out.json(result)
            else:
                out.result(invocation.operation_id, result)
            return _exit.ERROR
        out.result(invocation.operation_id, result)
        return _exit.OK
    except Ambiguous as ambiguous:
        return ambiguous_exit(ambiguous, out)
    except Refused as refused:
        out.error(refused.as_error())
        return _exit.ERROR
    except MaiaError as error:
        out.error(error)
        return _exit.exit_code(error)
    except TimeoutError:
        out.message("timed out")
        return _exit.TIMEOUT
