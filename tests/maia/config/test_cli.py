"""`maia config check|admit|show` against real files and a real Node process: check lists
every problem with file, line and column and exits 2 without a Node; admit --dry-run shows
the diff and admits nothing; admit --yes admits; show names each value's source; a Project
file with an error gives its line and column from admit, and nothing is admitted."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..cli._node import Cli, running_node


def run(home: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`maia ...` in this process with `home` and `cwd`."""
    return Cli(home, cwd)(*args)


def write(path: Path, text: str) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.write_text(text)
    os.chmod(path, 0o600)


BAD_PROJECT = """{
  "schemaVersion": "maia.project-config.v1",
  "projectKey": "app",
  "limits": {"maxLiveSessions": 0},
  "allowedExecutors": ["echo"]
}
"""


def test_check_lists_every_problem_with_line_and_column(tmp_path: Path) -> None:
    """Two files with mistakes: every problem printed as file:line:col, exit 2, no Node."""
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir(mode=0o700)
    work.mkdir(mode=0o700)
    write(
        home / "config.jsonc",
        '{\n  "swarm": {"defaultTimezone": "Not/AZone"},\n'
        '  "defaults": {"connectionRef": "bare"}\n}\n',
    )
    write(work / "app" / ".maia" / "config.jsonc", BAD_PROJECT)
    result = run(home, work, "config", "check", "--root", str(work / "app"))
    assert result.returncode == 2, result.stderr
    lines = result.stdout.splitlines()
    user, project = str(home / "config.jsonc"), str(work / "app" / ".maia" / "config.jsonc")
    assert f"{user}:2:13: swarm.defaultTimezone: 'Not/AZone' is not an IANA time zone" in lines
    assert any(line.startswith(f"{user}:3:16: defaults.connectionRef:") for line in lines)
    assert any(line.startswith(f"{project}:4:14: limits.maxLiveSessions:") for line in lines)
    assert any(line.startswith(f"{project}:5:24: allowedExecutors[0]:") for line in lines)
    assert "4 problems" in result.stderr
    assert not (home / "node.json").exists()


def test_check_of_good_files_exits_0(tmp_path: Path) -> None:
    """A valid user file and an absent Project file: exit 0, --json says ok."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    write(home / "config.jsonc", '{"swarm": {"defaultTimezone": "Europe/Paris"}}')
    result = run(home, tmp_path, "config", "check", "--json")
    assert result.returncode == 0, result.stdout
    assert json.loads(result.stdout)["ok"] is True


def test_check_of_a_root_that_is_no_folder_is_a_problem(tmp_path: Path) -> None:
    """`config check --root PATH` where PATH is no folder (a typo) exits 2 naming it; it
    said `ok`, as for a Project without a file."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    missing = tmp_path / "no-such-app"
    result = run(home, tmp_path, "config", "check", "--root", str(missing))
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stdout == f"{missing}: $: is not a folder: no Project root to check\n"
    assert "1 problem in 1 file(s) checked" in result.stderr


def test_check_usage_error_with_json_is_one_document(tmp_path: Path) -> None:
    """`config check --bogus --json` prints the invalid_request document naming the flag
    (docs/cli.md: a usage error is that document too), exit 2; stdout was empty."""
    result = run(tmp_path, tmp_path, "config", "check", "--bogus", "--json")
    assert result.returncode == 2
    error = json.loads(result.stdout)["error"]
    assert (error["code"], error["details"]) == ("invalid_request", {"path": "--bogus"})
    assert "No such option" in result.stderr


def test_a_home_problem_is_said_once(tmp_path: Path) -> None:
    """A home writable by others is one problem, not two (the user file's and the
    inventory's, both read from it)."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    os.chmod(home, 0o777)
    result = run(home, tmp_path, "config", "check")
    assert result.returncode == 2
    assert len(result.stdout.splitlines()) == 1, result.stdout
    assert "writable by group or others" in result.stdout
    assert "1 problem in" in result.stderr


@pytest.fixture(scope="module")
def node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    """A foreground Node on a fresh home, and a private folder for Project roots."""
    base = tmp_path_factory.mktemp("config-cli")
    work = base / "work"
    work.mkdir(mode=0o700)
    with running_node(base) as cli:
        yield cli.home, work


def test_admit_dry_run_then_yes_then_show(node: tuple[Path, Path]) -> None:
    """--dry-run prints the diff and admits nothing; --yes admits; show says the source and
    that an edited file differs until it is admitted."""
    home, work = node
    write(home / "config.jsonc", '{"swarm": {"capacity": {"maxLiveSessions": 3}}}')
    dry = run(home, work, "config", "admit", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "swarm.capacity.maxLiveSessions" in dry.stdout
    assert "added" in dry.stdout
    shown = run(home, work, "config", "show", "--json")
    assert json.loads(shown.stdout)["result"]["user"]["file"] == "never-admitted"
    done = run(home, work, "config", "admit", "--yes")
    assert done.returncode == 0, done.stderr
    assert "swarm.capacity.maxLiveSessions" in done.stderr  # the diff shown before confirming
    assert "config.admit.confirm: done" in done.stdout
    write(home / "config.jsonc", '{"swarm": {"capacity": {"maxLiveSessions": 4}}}')
    shown = run(home, work, "config", "show")
    assert shown.returncode == 0, shown.stderr
    assert "edited since admitted" in shown.stdout
    # named as the file names it; the old name (kept in --json) is not shown twice
    line = next(x for x in shown.stdout.splitlines()
                if x.startswith("swarm.capacity.maxLiveSessions"))  # fmt: skip
    assert line.split() == ["swarm.capacity.maxLiveSessions", "3", "(user)"]
    assert not any(x.startswith("limits.") for x in shown.stdout.splitlines())
    effective = json.loads(run(home, work, "config", "show", "--json").stdout)["result"]
    assert effective["effective"]["limits"] == effective["effective"]["swarm.capacity"]


def test_admit_dry_run_takes_the_command_id_its_help_lists(node: tuple[Path, Path]) -> None:
    """`config admit --dry-run --command-id C` previews (exit 0) and admits nothing, as
    every pair's stem does; it was `No such option '--command-id'` (exit 2)."""
    home, work = node
    write(home / "config.jsonc", '{"swarm": {"capacity": {"maxLiveSessions": 5}}}')
    before = json.loads(run(home, work, "config", "show", "--json").stdout)["result"]["user"]
    for args in (["--command-id", "dry-1"], ["--command-id=dry-2", "--yes"]):
        dry = run(home, work, "config", "admit", "--dry-run", *args, "--json")
        assert dry.returncode == 0, dry.stderr
        assert json.loads(dry.stdout)["result"]["changed"] is True
    after = json.loads(run(home, work, "config", "show", "--json").stdout)["result"]["user"]
    assert after["revision"] == before["revision"]


def test_admit_of_a_bad_project_file_names_line_and_column(node: tuple[Path, Path]) -> None:
    """A Project file with mistakes: admit exits 1 naming file:line:col of each, and the
    Project's configuration stays never admitted."""
    home, work = node
    root = work / "app"
    root.mkdir(mode=0o700)
    added = run(home, work, "project", "add", str(root), "--project-key", "app", "--json")
    assert added.returncode == 0, added.stderr
    project_id = json.loads(added.stdout)["result"]["project"]["projectId"]
    write(root / ".maia" / "config.jsonc", BAD_PROJECT)
    refused = run(home, work, "config", "admit", "--project-id", project_id, "--yes")
    assert refused.returncode == 1
    source = str(root / ".maia" / "config.jsonc")
    assert f"{source}:4:14: limits.maxLiveSessions" in refused.stderr
    assert f"{source}:5:24: allowedExecutors[0]" in refused.stderr
    shown = run(home, work, "config", "show", "--project-id", project_id, "--json")
    status = json.loads(shown.stdout)["result"]["project"]
    assert (status["file"], status["revision"]) == ("invalid", 1)


def test_show_names_a_whole_file_problem_by_its_file(node: tuple[Path, Path]) -> None:
    """A problem of the file as a whole (a symlink: no line) is shown `file: $: ...`, as
    `config check` prints it, not `file:?:?: $: ...`."""
    home, work = node
    target = work / "elsewhere.jsonc"
    write(target, "{}")
    (home / "config.jsonc").unlink(missing_ok=True)
    (home / "config.jsonc").symlink_to(target)
    try:
        shown = run(home, work, "config", "show")
        assert shown.returncode == 0, shown.stderr
        assert f"  {home / 'config.jsonc'}: $: is a symbolic link" in shown.stdout
        assert "?" not in shown.stdout
    finally:
        (home / "config.jsonc").unlink()


def test_a_problem_past_the_wire_bounds_is_cut_not_fatal(node: tuple[Path, Path]) -> None:
    """A 600,000-character unknown key and a 2,000-character time zone: config show
    answers (it was validation_failed on its own problems), node.status lists the file
    invalid (it left it out), and admit --dry-run is configuration_invalid (it was a frame
    over 1 MiB, frame_too_large)."""
    home, work = node
    write(home / "config.jsonc",
          json.dumps({"k" * 600_000: 1, "swarm": {"defaultTimezone": "Z" * 2000}}))  # fmt: skip
    shown = run(home, work, "config", "show", "--json")
    assert shown.returncode == 0, shown.stdout[:300]
    user = json.loads(shown.stdout)["result"]["user"]
    assert user["file"] == "invalid"
    assert len(user["problems"]) == 2
    assert all(len(p["path"]) <= 512 and len(p["detail"]) <= 1024 for p in user["problems"])
    assert user["problems"][0]["path"].endswith("\u2026")
    status = json.loads(run(home, work, "node", "status", "--json").stdout)["result"]
    assert ("user", "invalid") in [(f["scope"], f["file"]) for f in status["configFiles"]]
    dry = run(home, work, "config", "admit", "--dry-run", "--json")
    assert dry.returncode == 1
    assert json.loads(dry.stdout)["error"]["code"] == "configuration_invalid"
    (home / "config.jsonc").unlink()


def test_project_relocate_through_the_cli(node: tuple[Path, Path]) -> None:
    """`maia project relocate confirm KEY ROOT --yes` after a move: the preview is shown,
    the Project moves, `project show` has the new root."""
    home, work = node
    # Roots short enough for the preview's 60-character cells to show them whole (a parallel
    # run's tmp_path, under popen-gwN/, is longer).
    with tempfile.TemporaryDirectory(prefix="maia-reloc-") as short:
        old, new = Path(short) / "old", Path(short) / "new"
        old.mkdir(mode=0o700)
        added = run(home, work, "project", "add", str(old), "--project-key", "reloc")
        assert added.returncode == 0, added.stderr
        os.rename(old, new)
        moved = run(home, work, "project", "relocate", "confirm", "reloc", str(new), "--yes")
        assert moved.returncode == 0, moved.stderr
        line = next(x for x in moved.stderr.splitlines() if x.startswith("fromRoot"))
        assert line.split() == ["fromRoot", str(old)]
        shown = run(home, work, "project", "show", "reloc", "--json")
        assert json.loads(shown.stdout)["result"]["project"]["rootPath"] == str(new)
