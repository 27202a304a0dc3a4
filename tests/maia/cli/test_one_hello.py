"""A connection says hello once (a second `node.hello` is `invalid_request`), so no CLI or
console path may send one on a connection that has said it. Every place in `maia/cli` and
`maia/console` that sends `node.hello` itself is listed here with why its connection is
fresh; any new one fails this test until it is checked and listed. `maia node hello` (CLI
and console) opens a connection of its own (`_hello_cmd.hello_anew`, `_quick._hello`);
tests/maia/cli/test_hello_command.py runs both against a real Node."""

from __future__ import annotations

import ast
from pathlib import Path

import maia.cli
import maia.console

# (module, enclosing function): why the connection has not said hello yet
FRESH = {
    ("_lean.py", "run_lean"): "a SyncClient it has just connect()ed (connect says no hello)",
    ("_hello_cmd.py", "hello_anew"): "a stand-in client without an endpoint (tests only)",
}
_SENDERS = {"request", "call", "send_message"}


def _hello_sends(folder: Path) -> set[tuple[str, str]]:
    found: set[tuple[str, str]] = set()
    for module in sorted(folder.glob("*.py")):
        tree = ast.parse(module.read_text())
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(function):
                if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and node.func.attr in _SENDERS and node.args):  # fmt: skip
                    continue
                first = node.args[0]
                said = (isinstance(first, ast.Constant) and first.value == "node.hello") or (
                    isinstance(first, ast.Name) and first.id == "HELLO")  # fmt: skip
                if said:
                    found.add((module.name, function.name))
    return found


def test_every_hello_the_cli_and_console_send_is_on_a_fresh_connection() -> None:
    cli = _hello_sends(Path(maia.cli.__file__).parent)
    console = _hello_sends(Path(maia.console.__file__).parent)
    assert console == set(), console  # the console goes through the CLI's execute
    assert cli == set(FRESH), cli
