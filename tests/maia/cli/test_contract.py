"""`maia contract generate|check`: fresh on main, stale and incompatible after an op changes."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest

import maia.protocol
from maia.cli import main
from maia.cli._contract_cmd import expected_files
from maia.protocol import REGISTRY, build_registry, field

REPO = Path(__file__).resolve().parents[3]


@attrs.frozen
class ShorterSessionRef:
    """Names one Session (with a shorter ID limit than the registered one)."""

    session_id: str = field(doc="The Session.", min_length=1, max_length=64)


def _changed_registry(**changes: Any) -> maia.protocol.Registry:
    ops = [
        attrs.evolve(op, **changes) if op.operation_id == "session.show" else op for op in REGISTRY
    ]
    return build_registry(ops)


def _copy_docs(tmp_path: Path) -> Path:
    (tmp_path / "docs").mkdir()
    for name in ("protocol.md", "registry.lock.json"):
        shutil.copy(REPO / "docs" / name, tmp_path / "docs" / name)
    return tmp_path


def test_committed_projections_are_fresh() -> None:
    """docs/protocol.md and docs/registry.lock.json match what the registry generates."""
    files, problems = expected_files(REPO)
    stale = [str(p) for p, text in files.items() if p.read_text("utf-8") != text]
    assert stale == [], "run: maia contract generate"
    assert problems == []


def test_check_passes_on_main(capsys: pytest.CaptureFixture[str]) -> None:
    """`maia contract check --json` exits 0 on the committed tree."""
    assert main(["contract", "check", "--root", str(REPO), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"ok": True, "stale": [], "problems": []}


def test_check_fails_after_an_op_changes(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An input limit changed without regenerating: stale files and an unbumped change named."""
    monkeypatch.setattr(maia.protocol, "REGISTRY", _changed_registry(input_type=ShorterSessionRef))
    assert main(["contract", "check", "--root", str(REPO)]) == 1
    err = capsys.readouterr().err
    assert "docs/protocol.md is stale" in err
    assert "docs/registry.lock.json is stale" in err
    assert "session.show was altered without a registry version bump" in err


def test_generate_refuses_an_unbumped_change_and_takes_a_bumped_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """generate will not launder an alteration; after a version bump it writes and check passes."""
    root = _copy_docs(tmp_path)
    before = (root / "docs" / "registry.lock.json").read_text("utf-8")
    monkeypatch.setattr(
        maia.protocol, "REGISTRY", _changed_registry(event_types=("session.peeked",))
    )
    assert main(["contract", "generate", "--root", str(root)]) == 1
    assert "session.show was altered" in capsys.readouterr().err
    assert (root / "docs" / "registry.lock.json").read_text("utf-8") == before
    major, minor, _ = (int(part) for part in maia.protocol.REGISTRY_VERSION.split("."))
    bumped = f"{major}.{minor + 1}.0"
    monkeypatch.setattr(maia.protocol, "REGISTRY_VERSION", bumped)
    assert main(["contract", "generate", "--root", str(root)]) == 0
    assert main(["contract", "check", "--root", str(root)]) == 0
    assert "session.peeked" in (root / "docs" / "protocol.md").read_text("utf-8")
    assert json.loads(before)["registryVersion"] != bumped


def test_removal_is_refused_and_addition_needs_a_minor_bump(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Removing an op without a deprecation fails; adding one fails until the minor moves."""
    root = _copy_docs(tmp_path)
    without = build_registry([op for op in REGISTRY if op.operation_id != "turn.show"])
    monkeypatch.setattr(maia.protocol, "REGISTRY", without)
    assert main(["contract", "check", "--root", str(root)]) == 1
    err = capsys.readouterr().err
    assert "turn.show was removed without a registry version bump" in err
    assert "turn.show was removed without a deprecation" in err
    show = REGISTRY.get("turn.show")
    assert show is not None
    extra = attrs.evolve(show, operation_id="turn.peek")
    monkeypatch.setattr(maia.protocol, "REGISTRY", build_registry([*REGISTRY, extra]))
    assert main(["contract", "generate", "--root", str(root)]) == 1
    assert "turn.peek was added without a minor registry version bump" in capsys.readouterr().err
    major, minor, _ = (int(part) for part in maia.protocol.REGISTRY_VERSION.split("."))
    monkeypatch.setattr(maia.protocol, "REGISTRY_VERSION", f"{major}.{minor}.1")
    assert main(["contract", "generate", "--root", str(root)]) == 1  # a patch is not enough
    monkeypatch.setattr(maia.protocol, "REGISTRY_VERSION", f"{major}.{minor + 1}.0")
    assert main(["contract", "generate", "--root", str(root)]) == 0
    assert main(["contract", "check", "--root", str(root)]) == 0


def test_a_stale_digest_constant_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """check names a maia/protocol/_generated.py that no longer matches; generate rewrites it."""
    root = _copy_docs(tmp_path)
    digest_file = root / "maia" / "protocol" / "_generated.py"
    digest_file.parent.mkdir(parents=True)
    committed = (REPO / "maia" / "protocol" / "_generated.py").read_text("utf-8")
    digest_file.write_text(committed.replace("sha256:", "sha256:0"), "utf-8")
    assert main(["contract", "check", "--root", str(root)]) == 1
    assert "maia/protocol/_generated.py is stale" in capsys.readouterr().err
    assert main(["contract", "generate", "--root", str(root)]) == 0
    assert REGISTRY.computed_digest in digest_file.read_text("utf-8")
    assert main(["contract", "check", "--root", str(root)]) == 0


def test_missing_markers_are_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A protocol.md without its markers is refused with a message naming them."""
    root = _copy_docs(tmp_path)
    (root / "docs" / "protocol.md").write_text("# no markers\n", "utf-8")
    assert main(["contract", "check", "--root", str(root)]) != 0
    assert "BEGIN GENERATED" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "needed"),
    [
        (["contract", "check"], "docs/protocol.md"),
        (["contract", "generate"], "docs/protocol.md"),
        (["contract", "fixtures", "verify", "--op", "turn.send"], "tests/fixtures/ops"),
    ],
)
def test_contract_commands_outside_a_source_tree_say_where_to_run(
    tmp_path: Path, args: list[str], needed: str
) -> None:
    """A real `maia contract ...` run in a folder that is not a Maia checkout exits 2 naming
    the missing path and `--root` (was a bare `[Errno 2]`, exit 1); it writes nothing."""
    done = subprocess.run(
        [sys.executable, "-m", "maia", *args], capture_output=True, text=True, timeout=60,
        cwd=tmp_path, stdin=subprocess.DEVNULL, check=False,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert f"{needed} does not exist" in done.stderr
    assert "not a Maia source tree" in done.stderr
    assert "--root DIR" in done.stderr
    assert "Errno" not in done.stderr
    assert list(tmp_path.iterdir()) == []
