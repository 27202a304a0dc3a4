"""The `maia` command line, projected from the operation registry.

`parse_invocation(argv) -> Invocation` parses one command line with no I/O; `execute(...)`
runs it on a connected client (anyio: trio and asyncio alike); `command_tree()` is the click
tree for help and completion; `main()` is the console script. The console (`maia.console`)
uses the same three, and `parse_line`: `parse_invocation` after the rewrites a typed
line gets.

Only `main` is imported eagerly: the other names load on first use (module `__getattr__`),
so `maia --version` does not pay for the registry and `maia --help` not for anyio.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from maia._lazy import lazy_exports

from ._main import main as main
from ._main import parse_line as parse_line

if TYPE_CHECKING:
    from ._execute import Requester as Requester
    from ._execute import execute as execute
    from ._exit import exit_code as exit_code
    from ._invocation import Invocation as Invocation
    from ._invocation import command_tree as command_tree
    from ._invocation import parse_invocation as parse_invocation

_LAZY = {
    "Requester": "._execute",
    "execute": "._execute",
    "exit_code": "._exit",
    "Invocation": "._invocation",
    "command_tree": "._invocation",
    "parse_invocation": "._invocation",
}
__all__ = ["Invocation", "Requester", "command_tree", "execute", "exit_code", "main",
           "parse_invocation", "parse_line"]  # fmt: skip


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
