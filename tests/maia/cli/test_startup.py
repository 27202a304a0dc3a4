"""What a short command loads: `maia session list --json` and `maia node status`, run as real
processes against a real Node, import no event loop at all (neither trio nor asyncio nor
anyio, nor wsproto or psutil: one question and one answer run on the SDK's blocking client);
a waiting command runs on anyio's asyncio backend, never on trio; lines that name no op load
no op."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator

import pytest

from ._node import TIMEOUT_S, Cli, running_node

# `-X importtime` lists every module a process imports, on stderr, one line each.
TRACED = [sys.executable, "-X", "importtime", "-c",
          "import sys; from maia.cli import main; sys.exit(main())"]  # fmt: skip


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    """A foreground Node on a fresh home."""
    with running_node(tmp_path_factory.mktemp("startup")) as started:
        yield started


def _imported(cli: Cli, *args: str) -> tuple[str, set[str]]:
    done = subprocess.run(
        [*TRACED, *args], capture_output=True, text=True, cwd=cli.cwd,
        env=cli.environment(), timeout=TIMEOUT_S, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    modules = {
        line.rsplit("|", 1)[1].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }
    return done.stdout, modules


def _family(modules: set[str], *roots: str) -> set[str]:
    return {
        name for name in modules if name in roots or name.startswith(tuple(f"{r}." for r in roots))
    }


@pytest.mark.parametrize("args", [["session", "list", "--json"], ["node", "status"]])
def test_one_question_commands_import_no_event_loop(cli: Cli, args: list[str]) -> None:
    """A real op command answers from the real Node on the blocking client: no trio, asyncio,
    anyio, wsproto, h11 or psutil among its imports."""
    stdout, modules = _imported(cli, *args)
    assert "maia.client._sync" in modules  # the trace covers the op path
    assert not _family(modules, "trio", "asyncio", "anyio", "wsproto", "h11", "psutil")
    if args[-1] == "--json":
        assert json.loads(stdout)["ok"] is True
    else:
        assert "epoch" in stdout


def test_a_waiting_command_runs_on_asyncio_not_trio(cli: Cli) -> None:
    """`session wait` (it repeats a bounded wait) runs `execute` on anyio's asyncio backend:
    the SDK's async client, and still no trio."""
    made = cli("session", "create", "--title", "waiter", "--json")
    session = json.loads(made.stdout)["result"]["session"]["sessionId"]
    _, modules = _imported(cli, "session", "wait", session, "--state", "idle", "--timeout", "5s")
    assert "maia.client._transport" in modules  # the async client's (anyio) WebSocket
    assert "asyncio" in modules
    assert not _family(modules, "trio")


@pytest.mark.parametrize("args", [["--help"], ["sesion", "list"], ["session", "list", "--schema"]])
def test_lines_loading_no_other_ops(args: list[str]) -> None:
    """`maia --help` and an unknown command load no op module; a `--schema` line only its own."""
    code = (
        "import sys, io, contextlib; from maia.cli import main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):\n"
        f"    main({args!r})\n"
        "print(sorted(m for m in sys.modules if m.startswith('maia.protocol._ops_')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=TIMEOUT_S, check=True)  # fmt: skip
    loaded = json.loads(done.stdout.replace("'", '"'))
    assert loaded == ([] if args[0] != "session" else ["maia.protocol._ops_session"])


def test_the_completion_variable_is_named_once() -> None:
    """`_main` checks the completion variable without loading `_completion`: same name."""
    from maia.cli import _completion, _main

    assert _main.COMPLETE_VAR == _completion.COMPLETE_VAR


def test_version_loads_neither_the_registry_nor_attrs() -> None:
    """`maia --version` answers before anything heavy: no attrs, no maia.core."""
    code = (
        "import sys, io, contextlib; from maia.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    main(['--version'])\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('attr', 'attrs')"
        " or m.startswith('maia.core')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=TIMEOUT_S, check=True)  # fmt: skip
    assert done.stdout.strip() == "[]"
