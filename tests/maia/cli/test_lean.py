"""The one-call lane (`maia.cli._lean`): which command lines it takes, that its table is the
registry's and the parser's, that against a real Node it prints what the regular path
prints while importing neither click, attrs, the registry nor an event loop, and that
whatever it cannot be sure of goes to the regular path, which reports it as before."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from maia.cli import _lean, _lean_table, parse_invocation
from maia.cli._lean import lean_operation, live_node, render_lean_table, run_lean
from maia.client import read_discovery

from ._node import TIMEOUT_S, Cli, running_node

HEAVY = ("attr", "attrs", "click", "trio", "anyio", "asyncio", "wsproto", "maia.protocol")


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    """A foreground Node on a fresh home, with one Session."""
    with running_node(tmp_path_factory.mktemp("lean")) as started:
        made = started("session", "create", "--title", "lean", "--json")
        assert made.returncode == 0, made.stderr
        yield started


def test_the_committed_table_is_what_the_registry_and_parser_give() -> None:
    """`_lean_table.py` is current (as `maia contract check` also says)."""
    source = Path(_lean_table.__file__).read_text("utf-8")
    assert source == render_lean_table()


def test_every_lane_command_parses_to_the_op_without_params() -> None:
    """Each path in the table is, to the real parser, its op with empty params."""
    assert ("session", "list") in _lean_table.OPERATIONS
    assert ("node", "status") in _lean_table.OPERATIONS
    for path, op_id in _lean_table.OPERATIONS.items():
        invocation = parse_invocation(list(path))
        assert (invocation.operation_id, invocation.params, invocation.references) == (
            op_id, {}, {}
        )  # fmt: skip


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["session", "list"], ("session.list", "human")),
        (["session", "list", "--json"], ("session.list", "json")),
        (["node", "status", "--jsonl"], ("node.status", "jsonl")),
        (["session", "list", "--limit", "5"], None),
        (["session", "list", "--json", "--jsonl"], None),
        (["--json", "session", "list"], None),
        (["session", "list", "--node", "ws://127.0.0.1:1/api/v1"], None),
        (["session", "create"], None),
        (["turn", "send", "x", "hi"], None),
        (["session"], None),
        ([], None),
    ],
)
def test_which_lines_the_lane_takes(args: list[str], expected: tuple[str, str] | None) -> None:
    """Only a table path, alone or with one output flag; any other word is the regular path's."""
    assert lean_operation(args) == expected


def test_no_node_means_the_regular_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a discovery file the lane steps aside (the regular path says `unavailable`)."""
    monkeypatch.setenv("MAIA_HOME", str(tmp_path / "empty"))
    assert live_node() is None
    assert run_lean(["session", "list", "--json"]) is None


def test_maia_node_env_means_the_regular_path(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    """`$MAIA_NODE` names the Node explicitly: the regular path handles it."""
    monkeypatch.setenv("MAIA_HOME", str(cli.home))
    assert live_node() is not None
    monkeypatch.setenv("MAIA_NODE", "ws://127.0.0.1:1/api/v1")
    assert live_node() is None


def test_a_stale_discovery_file_means_the_regular_path(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A record whose process started at another time (a reused pid) is not a live Node."""
    record = read_discovery(cli.home / "node.json")
    assert record is not None
    home = tmp_path / "stale"
    home.mkdir()
    (home / "node.json").write_text(
        json.dumps({**record.to_json(), "startTime": record.start_time - 3600}), "utf-8"
    )
    monkeypatch.setenv("MAIA_HOME", str(home))
    assert live_node() is None


def test_a_registry_mismatch_means_the_regular_path(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Node on another registry answers the hello with registryMatch false: the lane steps
    aside, so the regular path refuses it as `protocol_incompatible`."""
    monkeypatch.setenv("MAIA_HOME", str(cli.home))
    other = {**_lean_table.HELLO_PARAMS, "registryDigest": "sha256:" + "0" * 64}
    monkeypatch.setattr(_lean_table, "HELLO_PARAMS", other)
    assert run_lean(["session", "list", "--json"]) is None


def test_a_refused_token_is_reported_as_the_regular_path_reports_it(
    cli: Cli, tmp_path: Path
) -> None:
    """A well-formed but wrong token: the upgrade is refused, and the lane prints the same
    error document and message, with the same exit code (4), as the regular path."""
    record = read_discovery(cli.home / "node.json")
    assert record is not None
    home = tmp_path / "wrong-token"
    home.mkdir()
    token = home / "node.token"
    token.write_text("0" * 64, "ascii")
    (home / "node.json").write_text(
        json.dumps({**record.to_json(), "tokenPath": str(token)}), "utf-8"
    )
    code = ERRORS.format(args=["node", "status", "--json"], heavy=HEAVY)
    lane = json.loads(_run(cli, code, {"MAIA_HOME": str(home)}))
    regular = json.loads(_run(cli, code, {"MAIA_HOME": str(home), "MAIA_NODE": record.url}))
    assert lane["code"] == 4
    # The lane answered (the regular path would have loaded click and the registry).
    assert not [m for m in lane["heavy"] if m.startswith(("click", "maia.protocol"))]
    assert "maia.core._errors" in lane["heavy"]
    assert (lane["code"], lane["out"], lane["err"]) == (
        regular["code"], regular["out"], regular["err"]
    )  # fmt: skip
    assert json.loads(lane["out"])["error"]["code"] == "unauthenticated"


def _run(cli: Cli, code: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=cli.cwd,
        env={**cli.environment(), **(env or {})}, timeout=TIMEOUT_S, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


LANE = (
    "import io, json, sys, contextlib\n"
    "from maia.cli import main\n"
    "out = io.StringIO()\n"
    "with contextlib.redirect_stdout(out):\n"
    "    code = main({args!r})\n"
    "heavy = sorted(m for m in sys.modules if m.split('.')[0] in {heavy!r}"
    " or m.startswith('maia.protocol'))\n"
    "print(json.dumps({{'code': code, 'out': out.getvalue(), 'heavy': heavy}}))\n"
)


# The same, with stderr, and counting the error table among what is heavy.
ERRORS = (
    "import io, json, sys, contextlib\n"
    "from maia.cli import main\n"
    "out, err = io.StringIO(), io.StringIO()\n"
    "with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):\n"
    "    code = main({args!r})\n"
    "heavy = sorted(m for m in sys.modules if m.split('.')[0] in {heavy!r}"
    " or m.startswith('maia.protocol') or m == 'maia.core._errors')\n"
    "print(json.dumps({{'code': code, 'out': out.getvalue(), 'err': err.getvalue(),"
    " 'heavy': heavy}}))\n"
)


@pytest.mark.parametrize("args", [["session", "list", "--json"], ["node", "status"]])
def test_the_lane_imports_nothing_heavy(cli: Cli, args: list[str]) -> None:
    """A real call on the lane: exit 0, its answer printed, and no click, attrs, registry or
    event loop imported."""
    done = json.loads(_run(cli, LANE.format(args=args, heavy=HEAVY)))
    assert done["code"] == 0
    assert done["heavy"] == []
    if args[-1] == "--json":
        assert json.loads(done["out"])["result"]["sessions"][0]["title"] == "lean"
    else:
        assert "epoch" in done["out"]


@pytest.mark.parametrize(
    "args", [["session", "list", "--json"], ["session", "list", "--jsonl"], ["session", "list"]]
)
def test_the_lane_prints_what_the_regular_path_prints(cli: Cli, args: list[str]) -> None:
    """Same bytes on stdout as the regular path (forced by naming the Node in `$MAIA_NODE`),
    but a relative time (`2s ago`), which may tick between the two runs."""
    record = read_discovery(cli.home / "node.json")
    assert record is not None
    code = LANE.format(args=args, heavy=HEAVY)
    lane = json.loads(_run(cli, code))
    regular = json.loads(_run(cli, code, {"MAIA_NODE": record.url}))
    assert lane["heavy"] == []  # each took the path meant
    assert regular["heavy"] != []
    assert lane["code"] == regular["code"] == 0
    assert _timeless(lane["out"]) == _timeless(regular["out"])
    assert "lean" in lane["out"]


def _timeless(text: str) -> str:
    """`text` with each relative time (`5s ago`, `just now`) replaced by one marker."""
    return re.sub(r"\b(\d+[smhd] ago|in \d+[smhd]|just now)", "<when>", text)


def test_node_status_json_matches_the_regular_path(cli: Cli) -> None:
    """node.status through the lane and the regular path: the same fields and values (but
    the uptime, which moves between the two calls)."""
    record = read_discovery(cli.home / "node.json")
    assert record is not None
    code = LANE.format(args=["node", "status", "--json"], heavy=HEAVY)
    lane = json.loads(json.loads(_run(cli, code))["out"])
    regular = json.loads(json.loads(_run(cli, code, {"MAIA_NODE": record.url}))["out"])
    for answer in (lane, regular):
        answer["result"].pop("uptimeMs")
    assert lane == regular


def test_the_lane_module_stays_light() -> None:
    """Importing the lane and its table loads none of what it exists to avoid."""
    code = (
        "import sys; import maia.cli._lean, maia.cli._lean_table, maia.cli._output\n"
        "import maia.client._sync, maia.core._node_record\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r}"
        " or m.startswith('maia.protocol') or m == 'maia.core._errors'))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=TIMEOUT_S, check=True)  # fmt: skip
    assert done.stdout.strip() == "[]"
    assert _lean.__doc__
