"""Making sure a Node runs on the embedded default, for bare `maia` (the README's first command).

`ensure_node()` starts one detached (`maia node start --detach`) on `$MAIA_HOME` or `~/.maia`
unless one runs, and says so on stderr. Bare `maia` and `maia console` themselves belong to the
console (`maia.console._launch`), which the CLI reaches through its served-command table: the
console imports the CLI, never the reverse.
"""

from __future__ import annotations

import sys

NEXT_STEP = "next: maia session create --title hello && maia turn send hello 'Hi!' --wait\n"


def _node_running() -> bool:
    from maia.client import find_live_node
    from maia.core import MaiaError

    try:
        find_live_node()
    except MaiaError:
        return False
    return True


def ensure_node() -> int:
    """Start a detached Node on the default home unless one runs; 0 when one runs after."""
    if _node_running():
        return 0
    sys.stderr.write("maia: no Node is running; starting one (maia node start --detach)\n")
    from ._main import _run_served

    return _run_served(("node", "start"), ["--detach"])
