"""An admitted `sessions.workerIdleMs` applies to new work at once, as docs/configuration.md
says of every admission: before, a Session's queue took the idle time of the configuration
the Node started with and never the admitted one (only the queue limit followed), so a
worker idled as long as the start file said until the Node restarted. A real Node, the CLI,
the echo worker."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from tests.maia.cli._node import Cli, running_node

DAY_MS = 86_400_000
BOUND_S = 30.0  # a worker let go at once is gone long before this; the old one idles a day


def _write(cli: Cli, idle_ms: int) -> None:
    path = cli.home / "config.jsonc"
    path.write_text(json.dumps({"sessions": {"workerIdleMs": idle_ms}}))
    os.chmod(path, 0o600)


def _live_workers(cli: Cli) -> int:
    status = cli("node", "status", "--json")
    assert status.returncode == 0, status.stderr
    return int(json.loads(status.stdout)["result"]["liveWorkers"])


def test_an_admitted_idle_time_lets_the_worker_go(tmp_path: Path) -> None:
    """Node started on a day of idle time; workerIdleMs 0 admitted; a turn's worker is let go
    when the turn ends (liveWorkers back to 0 within a generous bound)."""
    config = json.dumps({"sessions": {"workerIdleMs": DAY_MS}})
    with running_node(tmp_path, config) as cli:
        os.chmod(cli.home / "config.jsonc", 0o600)
        _write(cli, 0)
        admitted = cli("config", "admit", "--yes")
        assert admitted.returncode == 0, admitted.stderr
        created = cli("session", "create", "--title", "idle")
        assert created.returncode == 0, created.stderr
        sent = cli("turn", "send", "idle", "hello", "--wait")
        assert sent.returncode == 0, sent.stderr
        deadline = time.monotonic() + BOUND_S
        while _live_workers(cli) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _live_workers(cli) == 0
