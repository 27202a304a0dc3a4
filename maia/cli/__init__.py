"""The `maia` command line, projected from the operation registry.

`parse_invocation(argv) -> Invocation` parses one command line with no I/O; `execute(...)`
runs it on a connected client (anyio: trio and asyncio alike); `command_tree()` is the click
tree for help and completion; `main()` is the console script. The console (`maia.console`)
uses the same three. Imports stay lazy so `maia --help` is fast.
"""

from ._execute import Requester as Requester
from ._execute import execute as execute
from ._exit import exit_code as exit_code
from ._invocation import Invocation as Invocation
from ._invocation import command_tree as command_tree
from ._invocation import parse_invocation as parse_invocation
from ._main import main as main
