"""The console's confirmation question: asked at its own prompt, only y/yes is a yes."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from prompt_toolkit.input import create_pipe_input
from prompt_toolkit.output import DummyOutput

from maia.console import CliSeam, SessionCache
from maia.console._repl import Repl


@pytest.mark.parametrize(
    ("typed", "expected"),
    [
        ("y\r", True),
        ("YES\r", True),
        ("\r", False),
        ("n\r", False),
        ("\x03", False),
        ("\x04", False),
    ],
)
def test_confirm_answers(tmp_path: Path, typed: str, expected: bool) -> None:
    """y and yes (any case) confirm; Enter, n, Ctrl-C and Ctrl-D refuse."""

    async def ask() -> bool:
        with create_pipe_input() as pipe:
            repl = Repl(client=None, seam=CliSeam(), cache=SessionCache(),
                        history_path=tmp_path / "history", input=pipe, output=DummyOutput(),
                        stdout=None, stderr=None)  # fmt: skip
            pipe.send_text(typed)
            async with asyncio.timeout(30):
                return await repl.confirm("Stop session_x?")

    assert asyncio.run(ask()) is expected
