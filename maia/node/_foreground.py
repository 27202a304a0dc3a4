"""The foreground Node of `maia node start`: run it until SIGTERM/SIGINT, report, exit code.

Shared by the CLI's click command and the Node's lean entry (`python -m maia.node start`),
so both print the same lines and exit with the same status. Plain `print` to stdout/stderr,
flushed (click's `echo` does the same), because the detached Node never imports click.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

import trio

from ._home import NodeHome
from ._service import NodeRunning, NodeStartError, run_node
from ._services import NodeConfig


def _say(text: str, *, err: bool = False) -> None:
    print(text, file=sys.stderr if err else sys.stdout, flush=True)


def run_foreground(home: NodeHome, port: int, children: tuple[tuple[str, Any], ...] = ()) -> int:
    """Run the Node in this process until it is stopped; 0 once stopped, 1 if it could not
    start (the reason on stderr: node.log when detached)."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")

    def ready(running: NodeRunning) -> None:
        _say(f"Maia Node {running.node_id} (pid {running.pid}) listening on {running.url}")

    try:
        trio.run(lambda: run_node(NodeConfig(home, port, children=children), on_ready=ready))
    except NodeStartError as error:
        _say(f"maia node: {error}", err=True)
        return 1
    except OSError as error:  # a full disk, a read-only home: name the file and the cause
        where = f" {error.filename}" if error.filename else ""
        _say(f"maia node: the Node failed to start: cannot write{where}: "
             f"{error.strerror or error}", err=True)  # fmt: skip
        return 1
    _say("Maia Node stopped")
    return 0
