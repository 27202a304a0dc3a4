"""What a short command loads: `maia session list --json` and `maia node status`, run as real
processes against a real Node, never import trio (the CLI runs the SDK on anyio's asyncio
backend, which imports in a fraction of trio's time); lines that name no op load no op."""

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


@pytest.mark.parametrize("args", [["session", "list", "--json"], ["node", "status"]])
def test_op_commands_never_import_trio(cli: Cli, args: list[str]) -> None:
    """A real op command answers from the real Node without trio among its imports."""
    stdout, modules = _imported(cli, *args)
    assert "maia.client._client" in modules  # the trace covers the op path
    assert not {name for name in modules if name == "trio" or name.startswith("trio.")}
    if args[-1] == "--json":
        assert json.loads(stdout)["ok"] is True
    else:
        assert "epoch" in stdout


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
