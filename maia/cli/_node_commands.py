"""`maia node start|status|stop` as a click group (also `python -m maia.node ...`).

`start` runs the Node in the foreground until SIGTERM/SIGINT; `start --detach` starts it
as a new session leader with its output in `<home>/node.log` and returns once the Node has
written its discovery file (it listens by then), or fails with the log's last lines.
`status` asks the running Node over the API (the SDK); `stop` sends SIGTERM to the pid in
the discovery file and waits, bounded, until the process is gone.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import click
import trio

from maia.core import MaiaError, find_live_node, process_start_time, read_discovery
from maia.node import NodeHome, backup_database, open_private
from maia.node._foreground import run_foreground

from ._machine_cmd import machine_argv, machine_children, machine_options

READY_TIMEOUT_S = 60.0
STOP_WAIT_S = 60.0

home_option = click.option(
    "--home",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The Node's home folder (default: $MAIA_HOME or ~/.maia).",
)


@click.group("node")
def node_group() -> None:
    """Start, inspect and stop the local Maia Node."""


@node_group.command("start")
@click.option("--detach", is_flag=True, help="Run in the background; return once it is ready.")
@click.option("--port", type=click.IntRange(0, 65535), default=0, help="API port (0: a free one).")
@home_option
@machine_options
def start_command(detach: bool, port: int, home: Path | None, **machines: Any) -> None:
    """Run the Node (in the foreground unless --detach)."""
    node_home = NodeHome.resolve(home)
    children = machine_children(machines)
    if detach:
        sys.exit(_start_detached(node_home, port, machine_argv(machines)))
    sys.exit(run_foreground(node_home, port, children))  # the lean entry's code path too


def _start_detached(home: NodeHome, port: int, extra: list[str] | None = None) -> int:
    try:
        home.ensure()
    except MaiaError as error:
        click.echo(f"maia node: {error.message}", err=True)
        return 1
    try:
        running = find_live_node(home.root)
    except MaiaError:
        pass  # nothing live: go on (the child takes the lock, so a race still has one winner)
    else:
        click.echo(
            f"maia node: a Maia Node already runs on {home.root}: pid {running.pid} at "
            f"{running.url}",
            err=True,
        )
        return 1
    # -P: the caller's folder is never on sys.path, so its own `storage/` or `maia/`
    # package cannot shadow Maia's.
    command = [sys.executable, "-P", "-m", "maia.node", "start", "--home", str(home.root)]
    command += ["--port", str(port), *(extra or [])]
    try:
        log_fd = open_private(home.log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    except (MaiaError, OSError) as error:
        message = error.message if isinstance(error, MaiaError) else str(error)
        click.echo(f"maia node: {message}", err=True)
        return 1
    this_run = os.fstat(log_fd).st_size  # where this run's lines begin in node.log
    try:
        child = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log_fd,
            stderr=log_fd,
            start_new_session=True,
            close_fds=True,
        )
    finally:
        os.close(log_fd)
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if child.poll() is not None:
            click.echo(f"maia node: the Node exited with status {child.returncode}", err=True)
            click.echo(_log_tail(home.log_path, since=this_run), err=True)
            return 1
        record = read_discovery(home.discovery_path)
        if record is not None and record.pid == child.pid and record.is_live():
            click.echo(f"Maia Node (pid {record.pid}) listening on {record.url}")
            return 0
        time.sleep(0.05)
    click.echo(f"maia node: not ready within {READY_TIMEOUT_S:.0f} s; stopping it", err=True)
    child.terminate()
    return 1


def _log_tail(path: Path, *, since: int, lines: int = 10) -> str:
    """The last lines the log got after offset `since` (never an earlier run's)."""
    try:
        with path.open("rb") as file:
            file.seek(max(since, path.stat().st_size - 8192))
            text = file.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


@node_group.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print the status as one JSON object.")
@home_option
def status_command(as_json: bool, home: Path | None) -> None:
    """Show the running Node's identity, uptime, storage and load."""

    # The SDK (anyio, wsproto's client) loads here: the Node process this module also
    # starts never needs it.
    from maia.client import open_client

    async def fetch() -> Any:
        async with open_client(home=NodeHome.resolve(home).root) as client:
            return await client.request("node.status")

    try:
        status = trio.run(fetch)
    except MaiaError as error:
        if as_json:
            click.echo(json.dumps({"ok": False, "error": error.to_wire()}))
        else:
            click.echo(f"maia node: {error.message}", err=True)
        sys.exit(1)
    if as_json:
        click.echo(json.dumps(status, sort_keys=True))
        return
    click.echo(_human_status(status))


def _human_status(status: dict[str, Any]) -> str:
    sessions = ", ".join(f"{k} {v}" for k, v in sorted(status["sessionsByState"].items()))
    return "\n".join(
        [
            f"node      {status['nodeId']} (epoch {status['epoch']}, version {status['version']})",
            f"uptime    {status['uptimeMs'] / 1000:.1f} s (since {status['startedAt']})",
            f"storage   {status['storage']['integrity']} "
            f"(schema {status['storage']['schemaVersion']})",
            f"sessions  {sessions or 'none'}",
            f"workers   {status['liveWorkers']} live, {status['queuedTurns']} turns queued",
            f"protocol  {status['protocol']} ({status['registryDigest']})",
        ]
    )


@node_group.command("stop")
@click.option("--timeout", type=click.FloatRange(1, 600), default=STOP_WAIT_S, show_default=True)
@home_option
def stop_command(timeout: float, home: Path | None) -> None:
    """Stop the running Node gracefully (SIGTERM, then wait until it has exited)."""
    node_home = NodeHome.resolve(home)
    try:
        record = find_live_node(node_home.root)
    except MaiaError as error:
        click.echo(f"maia node: {error.message}")
        return
    try:
        os.kill(record.pid, signal.SIGTERM)
    except ProcessLookupError:
        click.echo("Maia Node already stopped")
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        started = process_start_time(record.pid)
        if started is None or abs(started - record.start_time) > 0.05:
            click.echo(f"Maia Node (pid {record.pid}) stopped")
            return
        time.sleep(0.05)
    click.echo(f"maia node: pid {record.pid} did not stop within {timeout:.0f} s", err=True)
    sys.exit(1)


@node_group.command("backup")
@click.argument("path", type=click.Path(dir_okay=False, path_type=Path))
@home_option
def backup_command(path: Path, home: Path | None) -> None:
    """Copy the Node's database to PATH (a new file), consistently, while it runs or not."""
    node_home = NodeHome.resolve(home)
    target = path.absolute()
    if not target.parent.is_dir():  # say which folder, not that the request is malformed
        what = ("is not a folder" if target.parent.exists()
                else "does not exist (create it first)")  # fmt: skip
        click.echo(f"maia node backup: the folder {target.parent} {what}; give a PATH in an "
                   "existing folder", err=True)  # fmt: skip
        sys.exit(2)
    try:
        size = backup_database(node_home.database_path, target)
    except MaiaError as error:
        # The PATH is the user's argument, not a request: say what is wrong with it.
        message = error.message.removeprefix("the request is malformed: ")
        click.echo(f"maia node backup: {message}", err=True)
        sys.exit(2 if error.code == "invalid_request" else 1)
    click.echo(f"Backed up {node_home.database_path} to {path} ({size} bytes)")
