"""`maia <noun> <verb> --schema`: exact documents, and refusals with empty stdout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Literal

import jsonschema
import pytest

from maia import __version__
from maia.cli import main
from maia.protocol import REGISTRY, schema_document

MAIA = [sys.executable, "-c", "import sys; from maia.cli import main; sys.exit(main())"]


def _run(args: list[str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([*MAIA, *args], capture_output=True, timeout=60, check=False)


def test_real_process_prints_one_identical_document() -> None:
    """A real `maia session create --schema=input` prints the same single document twice."""
    first, second = (
        _run(["session", "create", "--schema=input"]),
        _run(["session", "create", "--schema=input"]),
    )
    assert first.returncode == 0
    assert first.stderr == b""
    assert first.stdout == second.stdout
    assert first.stdout.endswith(b"}\n")
    assert first.stdout.count(b"\n}\n") == 1
    doc = json.loads(first.stdout)
    jsonschema.Draft202012Validator.check_schema(doc)
    assert doc == schema_document("session.create", "input")


def test_real_process_refuses_runtime_options() -> None:
    """A real `maia session show --schema --node x` prints nothing and exits non-zero."""
    result = _run(["session", "show", "--schema", "--node", "x"])
    assert result.returncode != 0
    assert result.stdout == b""
    assert b"--node" in result.stderr
    assert len(result.stderr) <= 300


@pytest.mark.parametrize(
    "args", [["session", "show", "--schema"], ["--help"], ["turn", "send", "--help"]]
)
def test_schema_and_help_import_no_runtime(args: list[str]) -> None:
    """`--schema` and `--help` never import trio, anyio or the SDK (they must stay fast)."""
    code = (
        "import sys, io, contextlib; from maia.cli import main\n"
        f"with contextlib.redirect_stdout(io.StringIO()): rc = main({args!r})\n"
        "assert rc == 0, rc\n"
        "heavy = {'trio', 'anyio', 'maia.client', 'wsproto'} & set(sys.modules)\n"
        "assert not heavy, heavy"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("operation_id", [op.operation_id for op in REGISTRY])
def test_every_op_has_both_documents(operation_id: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Each registered op's command prints its input and its output (envelope) schema."""
    path = operation_id.split(".")
    assert main([*path, "--schema=input"]) == 0
    assert json.loads(capsys.readouterr().out) == schema_document(operation_id, "input")
    assert main([*path, "--schema", "--json"]) == 0
    output = json.loads(capsys.readouterr().out)
    assert output == schema_document(operation_id, "output")
    assert {branch["properties"]["ok"]["const"] for branch in output["oneOf"]} == {True, False}
    assert main([*path, "--schema=output"]) == 0
    assert json.loads(capsys.readouterr().out) == output


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["session", "show", "--schema", "--node", "x"], "--node"),
        (["session", "show", "--schema", "--node=secret-value"], "--node"),
        (["session", "show", "session_1", "--schema"], "an operand"),
        (["session", "create", "--schema", "input"], "an operand"),
        (["session", "show", "--schema=bogus"], "no value but input or output"),
        (["session", "show", "--schema", "--schema=input"], "more than once"),
        (["session", "show", "--schema", "--schema"], "more than once"),
        (["session", "show", "--schema", "--json", "--json"], "--json"),
        (["events", "read", "--schema", "--follow"], "--follow"),
        (["turn", "send", "--schema", "--wait"], "--wait"),
        (["session", "stop", "--schema", "--yes"], "--yes"),
        (["config", "admit", "--dry-run", "--yes", "--schema"], "--yes"),
        (["routine", "run", "--schema", "--dry-run", "-y"], "-y"),
        (["session", "show", "--schema", "--profile=p"], "--profile"),
        (["session", "show", "--schema", "-"], "'-'"),
        (["session", "show", "--schema-digest"], "No such option"),
        (["bogus", "--schema"], "No such command"),
        (["session", "bogus", "--schema"], "No such command"),
        (["session", "--schema"], "--schema"),
        (["--node", "x", "session", "show", "--schema"], "--node"),
        (["session", "show", "--", "--schema"], "unavailable"),
        (["session", "show"], "Missing argument"),
    ],
)
def test_refusals_leave_stdout_empty(
    args: list[str], says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each refused line exits non-zero with empty stdout and a short message naming it."""
    assert main(args) != 0
    out, err = capsys.readouterr()
    assert out == ""
    assert says in err
    assert len(err) <= 300
    assert "secret-value" not in err


def test_version_prints_registry_summary(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`maia version` prints the version, protocol, registry digest and ops by noun."""
    assert main(["version"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"maia {__version__}\n")
    assert "protocol maia.protocol/v1alpha1" in out
    assert REGISTRY.digest in out
    assert f"operations {len(REGISTRY)}: " in out
    assert "session 8" in out
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"maia {__version__}\n"


def test_help_lists_nouns(capsys: pytest.CaptureFixture[str]) -> None:
    """`maia --help` lists the nouns projected from the registry."""
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for noun in ("session", "turn", "receipt", "events", "contract"):
        assert noun in out


def test_console_script_is_installed() -> None:
    """The installed `maia` console script runs (the README's entry point)."""
    script = Path(sys.executable).parent / "maia"
    result = subprocess.run([script, "--version"], capture_output=True, timeout=60, check=False)
    assert result.stdout == f"maia {__version__}\n".encode()


def test_node_status_without_schema_runs_the_op(tmp_path: Path) -> None:
    """`maia node status` (no --schema) calls the Node (exit 6: none runs), not schema mode."""
    env = {**os.environ, "MAIA_HOME": str(tmp_path / "home")}
    result = subprocess.run(
        [*MAIA, "node", "status"], capture_output=True, timeout=60, check=False, env=env
    )
    assert result.returncode == 6
    assert result.stdout == b""
    assert b"node" in result.stderr.lower()


def _stems() -> list[tuple[str, ...]]:
    from maia.cli._pairs import pairs

    return [stem for stem, _ in pairs(REGISTRY)]


@pytest.mark.parametrize("stem", _stems(), ids=".".join)
def test_pair_stem_prints_its_ops_documents(
    stem: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    """A pair's stem (`routine disable --schema`) prints its confirm's documents, and with
    `--dry-run` its preview's, instead of running the preview (it used to call the Node)."""
    confirm, preview = ".".join((*stem, "confirm")), ".".join((*stem, "preview"))
    cases: list[tuple[list[str], str, Literal["input", "output"]]] = [
        (["--schema"], confirm, "output"),
        (["--schema=input"], confirm, "input"),
        (["--dry-run", "--schema"], preview, "output"),
        (["--schema=input", "--dry-run", "--json"], preview, "input"),
    ]
    for args, operation_id, which in cases:
        assert main([*stem, *args]) == 0, args
        out, err = capsys.readouterr()
        assert err == ""
        assert json.loads(out) == schema_document(operation_id, which)
    assert main([*stem, "--schema", "--yes"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "--yes" in err


def test_real_pair_stem_schema_contacts_no_node(tmp_path: Path) -> None:
    """A real `maia routine disable --schema` with no Node prints the schema, exit 0 (it
    was exit 6, `no Maia Node is running`: the stem ran its preview)."""
    env = {**os.environ, "MAIA_HOME": str(tmp_path / "home")}
    result = subprocess.run(
        [*MAIA, "routine", "disable", "--schema"], capture_output=True, timeout=60, env=env
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == b""
    assert json.loads(result.stdout) == schema_document("routine.disable.confirm", "output")
    assert not (tmp_path / "home").exists()


def _shortcuts() -> list[tuple[tuple[str, ...], str]]:
    from maia.cli._shortcuts import SHORTCUTS

    return [(s.path, s.operation_id) for s in SHORTCUTS() if ".".join(s.path) not in REGISTRY]


@pytest.mark.parametrize(("path", "operation_id"), _shortcuts(), ids=str)
def test_shortcut_prints_its_ops_documents(
    path: tuple[str, ...], operation_id: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A shortcut (`webhook list --schema`, `approval allow --schema=input`) prints its op's
    documents, and a confirm's with `--dry-run` its preview's; it refused `--schema` as an
    unknown option."""
    assert main([*path, "--schema"]) == 0
    out, err = capsys.readouterr()
    assert (json.loads(out), err) == (schema_document(operation_id, "output"), "")
    assert main([*path, "--schema=input"]) == 0
    assert json.loads(capsys.readouterr().out) == schema_document(operation_id, "input")
    if operation_id.endswith(".confirm"):
        assert main([*path, "--dry-run", "--schema"]) == 0
        preview = operation_id.removesuffix(".confirm") + ".preview"
        assert json.loads(capsys.readouterr().out) == schema_document(preview, "output")
    assert main([*path, "--schema", "--node", "x"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert "--node" in err


@pytest.mark.parametrize("operation_id", [op.operation_id for op in REGISTRY])
def test_output_describes_the_clients_own_errors(operation_id: str) -> None:
    """`--schema` describes every failure the CLI's `--json` prints for the command, the
    client's own included: a Node of another registry (`protocol_incompatible`, raised by
    the SDK's hello for any command) and an answer over the frame (`frame_too_large`)."""
    from maia.protocol import MaiaError

    validator = jsonschema.Draft202012Validator(schema_document(operation_id, "output"))
    for code in ("protocol_incompatible", "frame_too_large"):
        error = MaiaError(code, "from the client", {"limit": 1})
        assert validator.is_valid({"ok": False, "error": error.to_wire()}), code
