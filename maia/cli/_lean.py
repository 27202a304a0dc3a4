"""The one-call lane: `maia session list [--json]`, `maia node status` and the other reads
that take no argument, answered before click, attrs or the registry are imported.

A short command is mostly start-up, and most of it was imports the answer never needed:
click to parse two words, the registry and its attrs classes to learn an op ID and the
digest, the error table for errors that did not happen. `_lean_table.py` (written by
`maia contract generate`, checked by `maia contract check`) holds what this lane needs as
plain literals: the hello's params and, for every op the lane may serve, its command path.
An op is there only when it reads (risk `read`, no confirmation, no stream), its command
line without flags parses to empty params the op's schema accepts, and nothing rewrites
its path (no shortcut, alias, pair or local command); the generator asks the real parser.

The lane takes only that path, alone or followed by `--json` or `--jsonl`, with no
`--node`/`$MAIA_NODE` (the discovery file names the Node) and no completion request. It
finds the live Node with the discovery file's own functions (`maia.core._node_record`),
makes the call on the SDK's blocking client, and prints through the same `Out` as every
command; a typed error from then on (a refused token, an error answer, a lost connection,
a timeout) is printed and mapped to its exit code as the regular path does. What it cannot
be sure of (no live Node, an unreadable token file, a registry mismatch, an unforeseen
exception) returns None and the command runs on the regular path from the start, which
says what went wrong in its usual words: the op only reads, so asking twice changes
nothing.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final, NamedTuple

_OUTPUT_FLAGS: Final = {"--json": "json", "--jsonl": "jsonl"}
_TIMEOUT_S: Final = 10.0  # what `connect_sync` gives the regular path


class _Target(NamedTuple):
    url: str
    token: str


def lean_operation(args: Sequence[str]) -> tuple[str, str] | None:
    """(op ID, output format) when `args` is one of the lane's command lines, else None."""
    from ._lean_table import OPERATIONS

    words = tuple(args)
    output = "human"
    if words and words[-1] in _OUTPUT_FLAGS:
        output, words = _OUTPUT_FLAGS[words[-1]], words[:-1]
    op_id = OPERATIONS.get(words)
    return None if op_id is None else (op_id, output)


def live_node() -> _Target | None:
    """The home's live Node and its token, as `locate_node` finds them without an explicit
    URL; None where that would fail (it then says why) or `$MAIA_NODE` names another."""
    from maia.core._node_record import (
        MAX_RECORD_BYTES,
        NODE_ENV,
        default_home,
        is_live,
        record_fields,
        token_is_well_formed,
    )

    if os.environ.get(NODE_ENV):
        return None
    try:
        raw = (default_home() / "node.json").read_bytes()
        if len(raw) > MAX_RECORD_BYTES:
            return None
        pid, start, url, token_path, _ = record_fields(json.loads(raw))
        if not is_live(pid, start):
            return None
        token = Path(token_path).read_text("ascii").strip()
    except (OSError, ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        return None
    return _Target(url, token) if token_is_well_formed(token) else None


def run_lean(args: Sequence[str]) -> int | None:
    """Answer `args` on the lane and return the exit code, or None: use the regular path."""
    from ._main import COMPLETE_VAR  # loaded already: `_main` calls this

    if os.environ.get(COMPLETE_VAR):  # completion is click's
        return None
    chosen = lean_operation(args)
    if chosen is None:
        return None
    target = live_node()
    if target is None:
        return None
    op_id, output = chosen
    from maia.client._sync import SyncClient

    from ._lean_table import HELLO_PARAMS
    from ._output import Out, waiting_note

    out = Out(sys.stdout, sys.stderr, output)
    client = SyncClient(target, timeout_s=_TIMEOUT_S)
    result: Any
    try:
        try:
            client.connect()
            hello = client.request("node.hello", dict(HELLO_PARAMS))
            if not (isinstance(hello, dict) and hello.get("registryMatch") is True):
                return None
            result = client.request(op_id, {}, on_slow=lambda: waiting_note(out, op_id))
        finally:
            client.close()
    except KeyboardInterrupt:
        sys.stderr.write("maia: interrupted\n")
        return 130  # `_exit.INTERRUPTED`
    except Exception as error:
        return _failed(error, out)
    out.result(op_id, result)
    return 0


def _failed(error: Exception, out: Any) -> int | None:
    """A typed error once the Node is found is reported as the regular path reports it
    (`_quick.run_quick`: the same message, document and exit code, and no second wait
    for a Node that timed out); anything else is the regular path's to meet again."""
    from maia.core import MaiaError

    if not isinstance(error, MaiaError):
        return None
    from ._exit import exit_code

    out.error(error)
    return exit_code(error)


def render_lean_table() -> str:
    """The text of `_lean_table.py`, from the registry and the real command-line parser."""
    from maia.client._projection import hello_params
    from maia.core import check
    from maia.protocol import REGISTRY

    from ._config_cmd import config_alias
    from ._deprecated import rewrite_deprecated
    from ._invocation import parse_invocation
    from ._quick import needs_execute

    paths: dict[tuple[str, ...], str] = {}
    for op_id in REGISTRY.ids():
        op = REGISTRY.get(op_id)
        if op is None or op.risk != "read" or op.confirmation != "none" or op.stream:
            continue
        path = op_id.split(".")
        if rewrite_deprecated(path, REGISTRY.deprecations)[0] != path:
            continue
        if config_alias(path) != path:
            continue
        try:
            invocation = parse_invocation(path)
            if op.input_type is not None:
                check(op.input_type, {})
        except Exception:  # needs an argument, or not an op command
            continue
        if (
            invocation.operation_id != op_id
            or invocation.params
            or invocation.references
            or invocation.local
            or needs_execute(invocation)
        ):
            continue
        paths[tuple(path)] = op_id
    lines = [
        '"""Generated by `maia contract generate` (do not edit): what the one-call lane',
        "(`_lean.py`) needs, so that it imports neither click nor the registry; `maia contract",
        'check` refuses it once stale."""',
        "",
        "from typing import Any, Final",
        "",
        "HELLO_PARAMS: Final[dict[str, Any]] = {",
        *(f"    {json.dumps(key)}: {json.dumps(item)}," for key, item in
          sorted(hello_params().items())),
        "}",
        "",
        "OPERATIONS: Final[dict[tuple[str, ...], str]] = {",
        *(f"    ({', '.join(json.dumps(word) for word in path)}): {json.dumps(op_id)},"
          for path, op_id in sorted(paths.items())),
        "}",
        "",
    ]  # fmt: skip
    return "\n".join(lines)
