"""One question, one answer, no event loop: the CLI's path for a plain op call.

Most commands ask the Node one thing and print it (`session list`, `node status`,
`turn show ID`). They run here on the SDK's blocking client (`maia.client._sync`): the hello,
a `reference.resolve` for each reference that is not a whole ID, the call, the output, the
same exit codes and messages as `execute` gives. Anything that waits, follows, streams,
confirms, reads a file or adds a Project (`needs_execute`) goes through `execute` on anyio.
The point is start-up: a short command is mostly imports, and this path imports neither
asyncio nor anyio nor wsproto.
"""

from __future__ import annotations

import sys
from typing import Any, Final

from maia.core import MaiaError

from . import _exit
from ._invocation import Invocation

# Ops `execute` treats specially (waits, streams, follows, pages, the default Project).
_SPECIAL: Final = frozenset(
    {
        "session.wait",
        "turn.wait",
        "session.attach",
        "observe.events",
        "events.read",
        "session.create",
    }
)


def needs_execute(invocation: Invocation) -> bool:
    """Whether the invocation needs `execute` (anyio) rather than one blocking call."""
    from maia.protocol import REGISTRY

    op = REGISTRY.get(invocation.operation_id or "")
    return (
        op is None
        or op.confirmation == "required"
        or invocation.operation_id in _SPECIAL
        or invocation.wait
        or invocation.follow
        or invocation.full
        or invocation.text_file is not None
    )


def run_quick(invocation: Invocation, interactive: bool) -> int:
    """Run a plain op call on the blocking client and return its exit code."""
    from maia.client._sync import connect_sync
    from maia.protocol import REGISTRY, check

    from ._hello_cmd import HELLO
    from ._output import Out, waiting_note
    from ._refs import Ambiguous, ambiguous_exit, reference_slots, with_ids

    out = Out(sys.stdout, sys.stderr, invocation.output)
    op_id = invocation.operation_id
    assert op_id is not None
    op = REGISTRY.get(op_id)
    assert op is not None
    del interactive  # nothing here asks the person
    if op_id == HELLO:
        return _hello(invocation, out)
    try:
        with connect_sync(invocation.node, home=invocation.home) as client:
            slots = reference_slots(dict(invocation.params), invocation.references)
            ids = {path: _resolve(client, text, kind, path) for path, kind, text in slots}
            params: dict[str, Any] = with_ids(dict(invocation.params), ids)
            if op.input_type is not None:
                check(op.input_type, params)  # refuse locally what the Node would refuse
            result = client.request(op_id, params, on_slow=lambda: waiting_note(out, op_id))
    except Ambiguous as ambiguous:
        return ambiguous_exit(ambiguous, out)
    except MaiaError as error:
        out.error(error)
        return _exit.exit_code(error)
    out.result(op_id, result)
    return _exit.OK


def _hello(invocation: Invocation, out: Any) -> int:
    """`node.hello`: its params are the hello of the connection (`_hello_cmd`)."""
    from maia.client._sync import connect_sync
    from maia.protocol import NodeHelloInput, check

    from ._hello_cmd import hello_options

    params = dict(invocation.params)
    try:
        check(NodeHelloInput, params)  # refuse locally what the Node would refuse
        with connect_sync(invocation.node, home=invocation.home, hello=hello_options(params),
                          require_registry_match=False) as greeted:  # fmt: skip
            result = greeted.hello
    except MaiaError as error:
        out.error(error)
        return _exit.exit_code(error)
    out.result("node.hello", result)
    return _exit.OK


def _resolve(client: Any, reference: str, kind: str, path: str) -> str:
    from ._refs import naming_field, resolved_id

    try:
        answer = client.request("reference.resolve", {"reference": reference, "kind": kind})
    except MaiaError as error:
        raise naming_field(error, path) from None
    return resolved_id(answer, reference, kind)
