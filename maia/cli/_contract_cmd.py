"""`maia contract generate|check`: write or verify the registry's generated projections.

The projections are the op reference between markers in `docs/protocol.md`, the lock
`docs/registry.lock.json`, `maia/protocol/_generated.py` (the digest every hello sends and
the op index, so no process rebuilds the registry to learn them) and
`maia/cli/_lean_table.py` (what the CLI's one-call lane needs: the hello's params and the
paths of the reads it serves). Both commands refuse an op removed or altered against the
committed lock without a `REGISTRY_VERSION` bump.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

PROTOCOL_DOC = Path("docs/protocol.md")
LOCK_FILE = Path("docs/registry.lock.json")
GENERATED_MODULE = Path("maia/protocol/_generated.py")
LEAN_TABLE = Path("maia/cli/_lean_table.py")


def expected_files(root: Path) -> tuple[dict[Path, str], list[str]]:
    """What the four files should hold, and the compatibility problems against the old lock.

    Raises ClickException when protocol.md is missing or lacks its markers.
    """
    from maia.protocol import (
        OPERATION_GROUPS,
        REGISTRY,
        REGISTRY_VERSION,
        compatibility_problems,
        lock_document,
        render_generated_module,
        render_lock,
        render_reference,
        splice_reference,
    )

    from ._lean import render_lean_table

    doc_path, lock_path = root / PROTOCOL_DOC, root / LOCK_FILE
    lock = lock_document(REGISTRY, REGISTRY_VERSION)
    problems: list[str] = []
    if lock_path.exists():
        try:
            old: dict[str, Any] = json.loads(lock_path.read_text("utf-8"))
        except ValueError:
            old = {}
            problems.append(f"{LOCK_FILE} is not JSON")
        problems += compatibility_problems(old, lock)
    try:
        doc = splice_reference(doc_path.read_text("utf-8"), render_reference(REGISTRY))
    except (OSError, ValueError) as error:
        raise click.ClickException(str(error)) from None
    files = {
        doc_path: doc,
        lock_path: render_lock(lock),
        root / GENERATED_MODULE: render_generated_module(REGISTRY, OPERATION_GROUPS),
        root / LEAN_TABLE: render_lean_table(),
    }
    return files, problems


def _source_tree(command: str, root: Path, needed: Path) -> None:
    """Exit 2 saying where to run `command` when ROOT is not a Maia source tree (these are
    a developer's commands: run elsewhere they used to print a bare `[Errno 2]`)."""
    if not (root / needed).exists():
        click.echo(
            f"maia contract {command}: {root / needed} does not exist: {root.resolve()} is not "
            "a Maia source tree; run it from the repository's root or pass --root DIR",
            err=True,
        )
        raise SystemExit(2)


def _stale(files: dict[Path, str]) -> list[Path]:
    return [p for p, text in files.items() if not p.exists() or p.read_text("utf-8") != text]


@click.group(name="contract")
def contract() -> None:
    """Generate and check the registry's projections (docs/protocol.md, the lock file)."""


@contract.command()
@click.option("--root", type=click.Path(file_okay=False, path_type=Path), default=Path("."))
def generate(root: Path) -> None:
    """Rewrite the op reference of docs/protocol.md, docs/registry.lock.json and _generated.py."""
    _source_tree("generate", root, PROTOCOL_DOC)
    files, problems = expected_files(root)
    if problems:
        for problem in problems:
            click.echo(f"maia contract generate: {problem}", err=True)
        raise SystemExit(1)
    for path in _stale(files):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(files[path], "utf-8")
        click.echo(f"wrote {path}", err=True)


@contract.command()
@click.option("--root", type=click.Path(file_okay=False, path_type=Path), default=Path("."))
@click.option("--json", "as_json", is_flag=True, help="One JSON document on stdout.")
def check(root: Path, as_json: bool) -> None:
    """Exit non-zero, naming what is stale or incompatible, when the projections drifted."""
    _source_tree("check", root, PROTOCOL_DOC)
    files, problems = expected_files(root)
    stale = [str(p.relative_to(root)) for p in _stale(files)]
    if as_json:
        click.echo(
            json.dumps({"ok": not (stale or problems), "stale": stale, "problems": problems})
        )
    else:
        for name in stale:
            click.echo(
                f"maia contract check: {name} is stale (run maia contract generate)", err=True
            )
        for problem in problems:
            click.echo(f"maia contract check: {problem}", err=True)
    if stale or problems:
        raise SystemExit(1)


@contract.group()
def fixtures() -> None:
    """The operation fixtures under tests/fixtures/ops (docs/conformance.md)."""


@fixtures.command()
@click.option("--root", type=click.Path(file_okay=False, path_type=Path), default=Path("."))
@click.option(
    "--fixtures",
    "folder",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The fixture folder (default: ROOT/tests/fixtures/ops).",
)
@click.option("--op", "only", multiple=True, help="Verify only this op (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="One JSON document on stdout.")
def verify(root: Path, folder: Path | None, only: tuple[str, ...], as_json: bool) -> None:
    """Run every op's fixtures against a real Node; exit non-zero naming each failure."""
    from maia.conformance import verify_fixtures

    if folder is None:
        _source_tree("fixtures verify", root, Path("tests") / "fixtures" / "ops")
    report = verify_fixtures(
        folder or root / "tests" / "fixtures" / "ops", repo=root.resolve(), only=only or None
    )
    if as_json:
        click.echo(json.dumps(report.to_json()))
    else:
        for line in report.lines():
            click.echo(f"maia contract fixtures verify: {line}")
    if not report.ok:
        raise SystemExit(1)
