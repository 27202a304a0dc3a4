"""The foreground Node of `maia node start`: run it until SIGTERM/SIGINT, report, exit code.

Shared by the CLI's click command and the Node's lean entry (`python -m maia.node start`),
so both print the same lines and exit with the same status. Plain `print` to stdout/stderr,
flushed (click's `echo` does the same), because the detached Node never imports click.

The ready line on stdout is the start's announcement; the Node tree logs the same fact
("Maia Node … listening on …", logger `maia.node`) for whoever runs it without this
function, so here the log's handlers leave that first record out and a person sees one
line. A later one (the API server restarted) is logged as usual.
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


class _AnnouncedOnce(logging.Filter):
    """Drops the Node tree's first "listening" record: the ready line says it already."""

    def __init__(self) -> None:
        super().__init__()
        self.dropped: logging.LogRecord | None = None  # the one left out, at every handler

    def filter(self, record: logging.LogRecord) -> bool:
        if self.dropped is None and _is_listening(record):
            self.dropped = record
        return record is not self.dropped


def _is_listening(record: logging.LogRecord) -> bool:
    message = record.msg if isinstance(record.msg, str) else ""
    return message.startswith("Maia Node ") and " listening on " in message


def run_foreground(home: NodeHome, port: int, children: tuple[tuple[str, Any], ...] = ()) -> int:
    """Run the Node in this process until it is stopped; 0 once stopped, 1 if it could not
    start (the reason on stderr: node.log when detached)."""
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")

    def ready(running: NodeRunning) -> None:
        _say(f"Maia Node {running.node_id} (pid {running.pid}) listening on {running.url}")

    announced = _AnnouncedOnce()
    handlers = list(logging.getLogger().handlers)  # where every logger's records end up
    for handler in handlers:
        handler.addFilter(announced)
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
    finally:
        for handler in handlers:
            handler.removeFilter(announced)
    _say("Maia Node stopped")
    return 0
