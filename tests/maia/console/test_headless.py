"""The console end to end against a real Node, driven headlessly through a prompt-toolkit
pipe input: commands, Tab completion from the live cache, events, attach, Ctrl-C, Ctrl-D."""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output.plain_text import PlainTextOutput

from maia.client import open_client
from maia.console import ConsoleOptions, console_main

DEBUG: list[Any] = []  # (stdout, stderr, home) of the running scenario, for failure messages
RIGHT = "\x1b[C"
CTRL_D = "\x04"
CTRL_R = "\x12"


class Sink(io.StringIO):
    """A text sink the test reads while the console writes."""

    def isatty(self) -> bool:
        return False


async def until(check: Callable[[], bool], what: str, within: float = 30) -> None:
    """Wait (bounded) until `check()` holds; the console gives no event to wait on."""
    try:
        async with asyncio.timeout(within):
            while not check():  # noqa: ASYNC110 - polling what another task writes
                await asyncio.sleep(0.02)
    except TimeoutError:
        seen = (
            [
                DEBUG[0].getvalue()[-2000:],
                DEBUG[1].getvalue()[-1000:],
                history(DEBUG[2]),
                DEBUG[3].getvalue()[-1500:],
            ]
            if DEBUG
            else []
        )
        raise AssertionError(
            f"timed out waiting for {what}; stdout, stderr, history: {seen}"
        ) from None


def history(home: Path) -> list[str]:
    path = home / "console_history"
    if not path.exists():
        return []
    return [line[1:] for line in path.read_text().splitlines() if line.startswith("+")]


async def make_session(client: Any, root: Path, title: str) -> str:
    project = await client.request("project.list", {})
    if project["projects"]:
        project_id = project["projects"][0]["projectId"]
    else:
        added = await client.call("project.add", command_id="p-console", root_path=str(root))
        project_id = added.project.project_id
    created = await client.call(
        "session.create", command_id=f"c-{title.split()[0]}", project_id=project_id, title=title
    )
    return str(created.session.session_id)


async def scenario(home: Path, root: Path) -> None:
    out, err, screen = Sink(), Sink(), Sink()
    DEBUG[:] = [out, err, home, screen]
    async with open_client(home=home) as client:
        alpha = await make_session(client, root, "Alpha report")
        with create_pipe_input() as pipe:
            output = PlainTextOutput(screen)
            options = ConsoleOptions(home=home, input=pipe, output=output, stdout=out, stderr=err)
            console = asyncio.ensure_future(console_main(options))
            await until(lambda: "maia>" in screen.getvalue(), "the first prompt")
            await until(lambda: "live" in screen.getvalue(), "the toolbar")

            pipe.send_text("session list\r")
            await until(lambda: "Alpha report" in out.getvalue(), "session list output")

            pipe.send_text("session show Alp\t")
            await until(lambda: "Alpha report'" in screen.getvalue(), "the completed title")
            pipe.send_text("\r")
            await until(lambda: "session show 'Alpha report'" in history(home), "Tab on a title")
            await until(lambda: out.getvalue().count(alpha) >= 2, "session show output")

            beta = await make_session(client, root, "Beta live")
            await until(lambda: f'session.created {beta} "Beta live"' in out.getvalue(), "event")
            pipe.send_text("session show Bet\t")
            await until(lambda: "Beta live'" in screen.getvalue(), "the completed title")
            pipe.send_text("\r")
            await until(lambda: "session show 'Beta live'" in history(home), "a fresh title")

            pipe.send_text("attach 'Alpha report'\r")
            await until(lambda: "following Alpha report" in err.getvalue(), "attach")
            # Nothing shows when the stream is attached: a turn sent before that is not
            # replayed, so send until one shows (bounded).
            for attempt in range(10):
                text = f"hello echo {attempt}"
                await client.call("turn.send", command_id=f"t-{attempt}", session_id=alpha,
                                  text=text)  # fmt: skip
                with contextlib.suppress(AssertionError):
                    await until(lambda: text in out.getvalue(), "the attached output", 3)  # noqa: B023
                    break
            assert "hello echo" in out.getvalue(), "attach showed the Session's output"
            os.kill(os.getpid(), signal.SIGINT)
            await until(lambda: "cancelled" in err.getvalue(), "Ctrl-C ends attach")

            pipe.send_text("session wait 'Beta live' --state stopped --timeout 120s\r")
            for _ in range(30):  # a SIGINT before the command starts is ignored: repeat
                os.kill(os.getpid(), signal.SIGINT)
                with contextlib.suppress(AssertionError):
                    await until(lambda: err.getvalue().count("cancelled") == 2, "Ctrl-C", 1)
                    break
            assert err.getvalue().count("cancelled") == 2, "Ctrl-C ended the wait"

            pipe.send_text("session show\r")
            await until(lambda: "usage:" in err.getvalue(), "a usage error")
            pipe.send_text("help\r")
            await until(lambda: "Ctrl-R searches history" in out.getvalue(), "help")
            typed = len(history(home))
            mark = len(screen.getvalue())
            pipe.send_text("sess")
            await until(lambda: "ion show" in screen.getvalue()[mark:], "a suggestion")
            pipe.send_text(RIGHT + "\r")  # → takes the grey suggestion from history
            await until(lambda: history(home)[typed:] == ["session show"], "auto-suggest")
            pipe.send_text(CTRL_R + "list")
            await until(lambda: "session list" in screen.getvalue()[mark:], "Ctrl-R finds it")
            pipe.send_text("\r")
            await until(lambda: history(home)[typed + 1 :] == ["session list"], "Ctrl-R runs it")
            assert not console.done(), "the console survived Ctrl-C and bad input"
            pipe.send_text(CTRL_D)
            async with asyncio.timeout(30):
                assert await console == 0


def test_console_against_a_real_node(node_home: Path, tmp_path: Path) -> None:
    """Typed commands show their output, Tab completes seeded and event-fed Session titles,
    live events print, attach follows a Session until Ctrl-C, Ctrl-C cancels a command but not
    the console, history drives auto-suggest and Ctrl-R, Ctrl-D leaves with 0."""
    (tmp_path / "project").mkdir()
    asyncio.run(scenario(node_home, tmp_path / "project"))


def test_no_node_says_how_to_start_one(tmp_path: Path) -> None:
    """Without a running Node the console names `maia node start` and exits 6."""
    err = Sink()
    with create_pipe_input() as pipe:
        options = ConsoleOptions(home=tmp_path / "empty", input=pipe, stderr=err)
        code = asyncio.run(console_main(options))
    assert code == 6
    assert "maia node start --detach" in err.getvalue()
    assert not (tmp_path / "empty" / "console_history").exists()
