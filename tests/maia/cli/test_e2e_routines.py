"""`maia routine ...` against a real Node: the preview/confirm pair as one command
(`--dry-run` previews only, `--yes` confirms, no terminal and no `--yes` refuses), and the
plain commands list, show, pause, resume."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from ._node import Cli, running_node


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    with running_node(tmp_path_factory.mktemp("routines")) as started:
        yield started


def project_id(cli: Cli) -> str:
    added = cli("project", "add", str(cli.cwd), "--json")
    if added.returncode == 0:
        return str(json.loads(added.stdout)["result"]["project"]["projectId"])
    listed = json.loads(cli("project", "list", "--json").stdout)["result"]
    return str(listed["projects"][0]["projectId"])


def create_args(cli: Cli, command_id: str) -> list[str]:
    return [
        "routine", "create", "--command-id", command_id, "--name", "standup",
        "--cron", "0 9 * * 1-5", "--timezone", "Europe/Berlin",
        "--project-id", project_id(cli), "--prompt", "summarize yesterday",
    ]  # fmt: skip


def routines(cli: Cli) -> list[dict[str, object]]:
    listed = cli("routine", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    return list(json.loads(listed.stdout)["result"]["routines"])


def test_dry_run_prints_only_the_preview_and_creates_nothing(cli: Cli) -> None:
    """--dry-run --json prints the preview (ID, 3 fires, digest, expiry); nothing is made."""
    before = routines(cli)
    shown = cli(*create_args(cli, "dry1"), "--dry-run", "--json")
    assert shown.returncode == 0, shown.stderr
    preview = json.loads(shown.stdout)["result"]
    assert preview["routineId"].startswith("routine_")
    assert len(preview["nextFires"]) == 3
    assert preview["nextFires"][0]["local"].endswith(("+01:00", "+02:00"))
    assert preview["inputDigest"].startswith("sha256:")
    assert "expiresAt" in preview
    assert routines(cli) == before


def test_without_a_terminal_or_yes_nothing_is_created(cli: Cli) -> None:
    """The preview is shown on stderr; the confirm is refused (exit 1) and never sent."""
    before = routines(cli)
    refused = cli(*create_args(cli, "no1"))
    assert refused.returncode == 1
    assert "--yes" in refused.stderr
    assert "routine.create.confirm will do this" in refused.stderr
    assert routines(cli) == before


def test_yes_creates_then_pause_resume_and_show(cli: Cli) -> None:
    """--yes previews and confirms; the routine is listed active; pause and resume move its
    revision; show prints it with its (empty) fires."""
    made = cli(*create_args(cli, "yes1"), "--yes", "--json")
    assert made.returncode == 0, made.stderr
    routine = json.loads(made.stdout)["result"]["routine"]
    assert (routine["state"], routine["revision"]) == ("active", 1)
    routine_id = routine["routineId"]
    assert routine_id in [r["routineId"] for r in routines(cli)]
    paused = cli("routine", "pause", routine_id, "--expected-revision", "1", "--json")
    assert paused.returncode == 0, paused.stderr
    assert json.loads(paused.stdout)["result"]["routine"]["state"] == "paused"
    stale = cli("routine", "resume", routine_id, "--expected-revision", "1", "--json")
    assert stale.returncode != 0
    assert json.loads(stale.stdout)["error"]["code"] == "storage_conflict"
    resumed = cli("routine", "resume", routine_id, "--expected-revision", "2")
    assert resumed.returncode == 0, resumed.stderr
    shown = cli("routine", "show", routine_id)
    assert shown.returncode == 0, shown.stderr
    assert "standup" in shown.stdout
    assert "SLOT" not in shown.stdout  # no fires yet: no table
    shown = cli("routine", "show", routine_id, "--json")
    assert json.loads(shown.stdout)["result"]["routine"]["revision"] == 3


def test_disable_projects_to_one_command(cli: Cli) -> None:
    """`routine disable --yes` previews and confirms; a second one is storage_conflict."""
    made = json.loads(cli(*create_args(cli, "dis1"), "--yes", "--json").stdout)["result"]["routine"]
    args = ["routine", "disable", "--routine-id", made["routineId"], "--expected-revision", "1"]
    done = cli(*args, "--yes", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["result"]["routine"]["state"] == "disabled"
    again = cli(*args, "--command-id", "dis-again", "--yes", "--json")
    assert json.loads(again.stdout)["error"]["code"] == "storage_conflict"


def _ok(done: object) -> dict[str, object]:
    assert done.returncode == 0, done.stderr  # type: ignore[attr-defined]
    return dict(json.loads(done.stdout)["result"])  # type: ignore[attr-defined]


def test_a_retried_confirm_with_yes_replays(cli: Cli) -> None:
    """`routine create|run|disable --command-id C --yes` run twice with the same values: the
    second answers `duplicate` with the first's receipt and result (it acted once); the same
    commandId with other values is still refused storage_conflict."""
    first = _ok(cli(*create_args(cli, "retry-create"), "--yes", "--json"))
    again = _ok(cli(*create_args(cli, "retry-create"), "--yes", "--json"))
    assert (first["delivery"], again["delivery"]) == ("new", "duplicate")
    assert again["receiptId"] == first["receiptId"]
    assert again["routine"] == first["routine"]
    routine_id = str(first["routine"]["routineId"])  # type: ignore[index]
    other = cli(*create_args(cli, "retry-create"), "--paused", "--yes", "--json")
    assert json.loads(other.stdout)["error"]["code"] == "storage_conflict"

    run = ["routine", "run", "--routine-id", routine_id, "--expected-revision", "1",
           "--command-id", "retry-run", "--yes", "--json"]  # fmt: skip
    ran, reran = _ok(cli(*run)), _ok(cli(*run))
    assert (ran["delivery"], reran["delivery"]) == ("new", "duplicate")
    assert (reran["receiptId"], reran["fire"]) == (ran["receiptId"], ran["fire"])
    shown = _ok(cli("routine", "show", routine_id, "--json"))
    assert len(shown["fires"]) == 1  # type: ignore[arg-type]

    disable = ["routine", "disable", "--routine-id", routine_id, "--expected-revision", "1",
               "--command-id", "retry-disable", "--yes", "--json"]  # fmt: skip
    done, redone = _ok(cli(*disable)), _ok(cli(*disable))
    assert (done["delivery"], redone["delivery"]) == ("new", "duplicate")
    assert redone["receiptId"] == done["receiptId"]
    assert redone["routine"]["state"] == "disabled"  # type: ignore[index]


def test_a_stale_revision_names_the_field(cli: Cli) -> None:
    """`routine pause` and `routine disable` at a revision the routine is not at fail
    storage_conflict with `details.path: expectedRevision` and both revisions."""
    routine_id = str(_ok(cli(*create_args(cli, "stale-rev"), "--yes", "--json"))["routine"]
                     ["routineId"])  # type: ignore[index]  # fmt: skip
    for args in (["routine", "pause", routine_id, "--expected-revision", "7"],
                 ["routine", "disable", "--routine-id", routine_id, "--expected-revision", "7",
                  "--yes"]):  # fmt: skip
        done = cli(*args, "--json")
        assert done.returncode == 1, done.stderr
        error = json.loads(done.stdout)["error"]
        assert error["code"] == "storage_conflict"
        assert error["details"] == {"routineId": routine_id, "actual": 1, "expected": 7,
                                    "path": "expectedRevision"}  # fmt: skip
