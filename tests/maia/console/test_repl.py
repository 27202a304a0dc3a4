"""The prompt loop without a Node: confirmation questions, built-ins, refused lines."""

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


def test_builtins_and_refusals(tmp_path: Path) -> None:
    """help prints the keys; feed off silences events and feed on restores them; console,
    a bare attach, an unknown command and a refused --schema line are usage errors (2)."""
    from maia.console import FeedEvent

    from .test_headless import Sink

    async def run() -> None:
        out, err = Sink(), Sink()
        with create_pipe_input() as pipe:
            repl = Repl(client=None, seam=CliSeam(), cache=SessionCache(),
                        history_path=tmp_path / "history", input=pipe, output=DummyOutput(),
                        stdout=out, stderr=err)  # fmt: skip
            assert await repl.dispatch(["help"]) == 0
            assert "Ctrl-R searches history" in out.getvalue()
            event = FeedEvent("session.created", "session_x", payload={"title": "quiet"})
            assert await repl.dispatch(["feed", "off"]) == 0
            repl.show_event(event)
            assert "quiet" not in out.getvalue()
            assert await repl.dispatch(["feed", "on"]) == 0
            repl.show_event(event)
            assert 'session.created session_x "quiet"' in out.getvalue()
            for words in (["console"], ["attach"], ["nosuch"], ["session", "show", "--schema",
                                                                 "--node", "x"]):  # fmt: skip
                assert await repl.dispatch(words) == 2, words
            assert "already in the console" in err.getvalue()
            assert "usage: attach REF" in err.getvalue()
            assert err.getvalue().count("usage:") == 3

    asyncio.run(run())


def test_a_pair_stem_with_schema_prints_its_document_offline(tmp_path: Path) -> None:
    """`routine disable --schema` typed in the console prints routine.disable.confirm's output
    schema, as `maia routine disable --schema` does, and contacts no Node (there is none: the
    console's client is None), rather than running the preview."""
    import json

    from maia.protocol import schema_document

    from .test_headless import Sink

    async def run() -> tuple[int, str, str]:
        out, err = Sink(), Sink()
        with create_pipe_input() as pipe:
            repl = Repl(client=None, seam=CliSeam(), cache=SessionCache(),
                        history_path=tmp_path / "history", input=pipe, output=DummyOutput(),
                        stdout=out, stderr=err)  # fmt: skip
            code = await repl.dispatch(["routine", "disable", "--schema"])
            return code, out.getvalue(), err.getvalue()

    code, printed, said = asyncio.run(run())
    assert (code, said) == (0, "")
    assert json.loads(printed) == schema_document("routine.disable.confirm", "output")
