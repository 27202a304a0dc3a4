"""The console once in a real terminal (a tmux pane on a private tmux server): a typed
command shows its output, Tab completes a Session title, a live event appears above the
prompt while a half-typed line stays intact, Ctrl-D leaves with 0."""

from __future__ import annotations

import asyncio
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from maia.client import open_client

pytestmark = pytest.mark.skipif(
    shutil.which("tmux") is None, reason="tmux is not installed (apt-get install -y tmux)"
)


class Pane:
    """One tmux pane on a server of our own (`-L`), so no user's tmux is touched."""

    def __init__(self, socket: str, exit_file: Path) -> None:
        self.socket = socket
        self.exit_file = exit_file  # the console's exit status, written when it has left

    def tmux(self, *args: str) -> str:
        done = subprocess.run(
            ["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=30
        )
        return done.stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-t", "console")

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "console", *keys)

    def until(self, check: Callable[[str], bool], what: str, within: float = 30) -> str:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            screen = self.screen()
            if check(screen):
                return screen
            time.sleep(0.05)
        raise AssertionError(f"timed out waiting for {what}; the screen:\n{self.screen()}")


@pytest.fixture
def pane(node_home: Path, tmp_path: Path) -> Iterator[Pane]:
    """`maia console` (the CLI's entry point) in a 120x30 tmux pane on the module's Node."""
    pane = Pane(f"maia-test-{uuid.uuid4().hex[:12]}", tmp_path / "exit-status")
    maia = "import sys; from maia.cli import main; sys.exit(main(['console']))"
    console = f"MAIA_HOME={shlex.quote(str(node_home))} {sys.executable} -c {shlex.quote(maia)}"
    # The shell records the exit status: tmux's own "Pane is dead" comes late when it comes.
    command = f"{console}; echo $? > {shlex.quote(str(pane.exit_file))}; sleep 60"
    pane.tmux("new-session", "-d", "-s", "console", "-x", "120", "-y", "30", command)
    try:
        yield pane
    finally:
        pane.tmux("kill-server")


def prompt_line(screen: str) -> str:
    """The last prompt line on the screen."""
    prompts = [line for line in screen.splitlines() if line.startswith("maia>")]
    return prompts[-1].rstrip() if prompts else ""


def sdk(home: Path, call: Callable[[Any], Any]) -> Any:
    async def run() -> Any:
        async with open_client(home=home) as client:
            return await call(client)

    return asyncio.run(run())


async def create(client: Any, root: Path, title: str) -> str:
    page = await client.request("project.list", {})
    if page["projects"]:
        project_id = page["projects"][0]["projectId"]
    else:
        added = await client.call("project.add", command_id="p-tmux", root_path=str(root))
        project_id = added.project.project_id
    created = await client.call(
        "session.create", command_id=f"tmux-{title.split()[0]}", project_id=project_id, title=title
    )
    return str(created.session.session_id)


def test_console_in_a_real_terminal(node_home: Path, tmp_path: Path, pane: Pane) -> None:
    """Output, Tab completion of a title, Ctrl-C cancelling a running command (not the
    console), a live event above an intact prompt, Ctrl-D."""
    sdk(node_home, lambda c: create(c, tmp_path, "Gamma tmux"))
    pane.until(lambda s: "maia>" in s and "workers 0 live" in s, "the prompt and its toolbar")

    pane.keys("session list", "Enter")
    pane.until(lambda s: "TITLE" in s and "Gamma tmux" in s, "the session list table")

    pane.keys("session show Gam", "Tab")
    pane.until(lambda s: "maia> session show 'Gamma tmux'" in s, "Tab completing the title")
    pane.keys("Enter")
    pane.until(lambda s: "title         Gamma tmux" in s, "the session show output")

    pane.keys("session wait 'Gamma tmux' --state stopped --timeout 120s", "Enter")
    for _ in range(30):  # Ctrl-C before the command runs only clears a line: repeat
        pane.keys("C-c")
        try:
            pane.until(lambda s: "^C cancelled" in s, "Ctrl-C to cancel the wait", within=1)
            break
        except AssertionError:
            continue
    pane.until(lambda s: "^C cancelled" in s and prompt_line(s) == "maia>", "the prompt back")

    pane.keys("project li")  # half typed (no history suggests it): the event must print above
    pane.until(lambda s: prompt_line(s) == "maia> project li", "typing")
    delta = sdk(node_home, lambda c: create(c, tmp_path, "Delta event"))
    event = f'session.created {delta} "Delta event"'

    def redrawn_below_event(screen: str) -> bool:
        lines = screen.rstrip().splitlines()
        rows = [i for i, line in enumerate(lines) if event in line]
        return bool(rows) and lines[rows[0] + 1 :][:1] == ["maia> project li"]

    # The event line sits right above the prompt, which still holds the half-typed line.
    pane.until(redrawn_below_event, "the event above an intact prompt")

    pane.keys("C-u")
    pane.until(lambda s: prompt_line(s) == "maia>", "the line cleared")
    pane.keys("C-d")
    pane.until(lambda _: pane.exit_file.exists() and pane.exit_file.read_text() != "", "Ctrl-D")
    assert pane.exit_file.read_text().strip() == "0"


@pytest.mark.skipif(shutil.which("less") is None, reason="less is not installed")
def test_long_output_goes_through_the_pager(pane: Pane) -> None:
    """Output longer than the screen opens `less`; q returns to an intact prompt."""
    pane.until(lambda s: "maia>" in s and "workers" in s, "the prompt and its toolbar")
    pane.tmux("resize-window", "-t", "console", "-y", "12")
    pane.keys("session list --help", "Enter")  # 25 lines on a 12-line screen
    screen = pane.until(lambda s: s.rstrip().endswith(":"), "less's prompt")
    assert "maia>" not in screen.rstrip().splitlines()[-1]
    pane.keys("q")
    pane.until(lambda s: prompt_line(s) == "maia>" and "workers" in s, "the prompt back")
    pane.keys("C-d")
    pane.until(lambda _: pane.exit_file.exists() and pane.exit_file.read_text() != "", "Ctrl-D")
    assert pane.exit_file.read_text().strip() == "0"
