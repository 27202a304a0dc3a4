"""An unknown word after a command group says what the group takes instead (a real `maia`)."""

from __future__ import annotations

import subprocess
import sys

import pytest

MAIA = [sys.executable, "-c", "import sys; from maia.cli import main; sys.exit(main())"]


def _refusal(args: list[str]) -> str:
    done = subprocess.run([*MAIA, *args], capture_output=True, timeout=60, check=False)
    assert done.returncode == 2
    assert done.stdout == b""
    return done.stderr.decode()


def test_a_pair_command_names_its_field_options() -> None:
    """`maia routine run NAME` (the routine as a word) points at --routine-id, not only
    "no such command"; --command-id, which every mutation has, is not among those shown."""
    said = _refusal(["routine", "run", "nightly"])
    assert "No such command 'nightly'" in said
    assert "`maia routine run` takes its fields as options (--routine-id" in said
    assert "--command-id" not in said
    assert "`maia routine run --help` lists them" in said


@pytest.mark.parametrize(
    ("args", "path", "has"),
    [
        (["session", "frob"], "maia session", ["create", "list", "show"]),
        (["routine", "frob"], "maia routine", ["create", "run", "show"]),
    ],
)
def test_a_group_lists_its_commands(args: list[str], path: str, has: list[str]) -> None:
    said = _refusal(args)
    assert f"No such command 'frob'; `{path}` has: " in said
    listed = said.split(" has: ", 1)[1].rstrip(".\n").split(", ")
    assert set(has) <= set(listed)
    assert listed == sorted(listed)


def test_a_long_list_points_at_help_instead() -> None:
    """The root has too many commands for a one-line refusal of 200 characters."""
    said = _refusal(["frob"])
    assert said == "maia: No such command 'frob'; `maia --help` lists its commands.\n"
