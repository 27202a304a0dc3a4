"""The console outlives its Node: when the Node stops, the toolbar says so and commands fail
with the CLI's message; when it starts again, the console reconnects by itself."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output.plain_text import PlainTextOutput

from maia.client import read_discovery
from maia.console import ConsoleOptions, console_main

from .test_headless import DEBUG, Sink, until


async def start_node(home: Path) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(  # noqa: ASYNC220 - starting it does not block; waiting is below
        [sys.executable, "-m", "maia.node", "start", "--home", str(home)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def ready() -> bool:
        record = read_discovery(home / "node.json")
        assert process.poll() is None, "the Node exited"
        return record is not None and record.pid == process.pid and record.is_live()

    await until(ready, "the Node to start", 60)
    return process


async def scenario(home: Path) -> None:
    out, err, screen = Sink(), Sink(), Sink()
    DEBUG[:] = [out, err, home, screen]
    node = await start_node(home)
    try:
        with create_pipe_input() as pipe:
            options = ConsoleOptions(
                home=home, input=pipe, output=PlainTextOutput(screen), stdout=out, stderr=err
            )
            console = asyncio.ensure_future(console_main(options))
            await until(lambda: "workers 0 live" in screen.getvalue(), "the toolbar")

            node.terminate()
            await asyncio.to_thread(node.wait, 60)
            await until(
                lambda: "the Node is unreachable" in out.getvalue(), "the console to say so"
            )
            pipe.send_text("session list\r")
            await until(lambda: "unavailable" in err.getvalue(), "the CLI's error")

            node = await start_node(home)
            await until(lambda: "the Node is back" in out.getvalue(), "the reconnection")
            mark = len(out.getvalue())
            pipe.send_text("session list\r")
            await until(lambda: "(none)" in out.getvalue()[mark:], "session list after the restart")
            assert not console.done()
            pipe.send_text("\x04")
            async with asyncio.timeout(30):
                assert await console == 0
    finally:
        node.terminate()
        await asyncio.to_thread(node.wait, 60)


def test_console_survives_a_node_restart(tmp_path: Path) -> None:
    """Node stopped: toolbar 'node unreachable', a command prints the CLI's error, the console
    stays; Node started again: the console says it is back and commands work."""
    asyncio.run(scenario(tmp_path / "home"))
