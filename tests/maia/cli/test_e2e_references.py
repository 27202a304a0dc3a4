"""References to routines and webhooks on the CLI, against a real Node process: an ID prefix
of 4+ hex digits (with or without the type prefix) or a routine's name resolves as a
Session's does (`reference.resolve`), and one naming several exits 2 listing them."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from ._node import Cli, running_node


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    """A foreground Node admitting a local webhook receiver, and a Project directory."""
    config = '{"webhooks": {"allowAddresses": ["127.0.0.1/32"]}}'
    with running_node(tmp_path_factory.mktemp("refs"), config=config) as started:
        yield started


def _project(cli: Cli) -> str:
    added = cli("project", "add", str(cli.cwd), "--json")
    if added.returncode == 0:
        return str(json.loads(added.stdout)["result"]["project"]["projectId"])
    return str(json.loads(cli("project", "list", "--json").stdout)["result"]["projects"][0]
               ["projectId"])  # fmt: skip


def _routine(cli: Cli, command_id: str, name: str) -> str:
    made = cli("routine", "create", "--command-id", command_id, "--name", name,
               "--cron", "0 9 * * *", "--timezone", "UTC", "--project-id", _project(cli),
               "--prompt", "hi", "--yes", "--json")  # fmt: skip
    assert made.returncode == 0, made.stderr
    return str(json.loads(made.stdout)["result"]["routine"]["routineId"])


def _shown_id(cli: Cli, *args: str) -> str:
    shown = cli(*args, "--json")
    assert shown.returncode == 0, shown.stderr
    result = json.loads(shown.stdout)["result"]
    return str(
        (result.get("routine") or result.get("webhook"))[
            "routineId" if "routine" in result else "webhookId"
        ]
    )


def test_a_routine_is_named_by_id_prefix_or_name(cli: Cli) -> None:
    """`routine show` and `routine pause` take an 8-digit ID prefix (bare or `routine_…`)
    and the routine's name; two routines of one name are ambiguous: exit 2, both listed."""
    routine_id = _routine(cli, "ref-r1", "nightly-report")
    digits = routine_id.removeprefix("routine_")[:8]
    assert _shown_id(cli, "routine", "show", digits) == routine_id
    assert _shown_id(cli, "routine", "show", f"routine_{digits}") == routine_id
    assert _shown_id(cli, "routine", "show", "Nightly-Report") == routine_id
    paused = cli("routine", "pause", digits, "--expected-revision", "1", "--json")
    assert paused.returncode == 0, paused.stderr
    assert json.loads(paused.stdout)["result"]["routine"]["routineId"] == routine_id

    twin = _routine(cli, "ref-r2", "nightly-report")
    both = cli("routine", "show", "nightly-report")
    assert both.returncode == 2
    assert both.stdout == ""
    assert "names 2 routines" in both.stderr
    for one in (routine_id, twin):
        assert one in both.stderr
    missing = cli("routine", "show", "no-such-routine", "--json")
    assert missing.returncode == 1
    assert json.loads(missing.stdout)["error"]["code"] == "resource_not_found"


def test_a_webhook_is_named_by_id_prefix(cli: Cli) -> None:
    """`webhook show` and `webhook test --dry-run` take a webhook ID prefix (bare or
    `hook_…`) and act on that webhook."""
    added = cli("webhook", "add", "--url", "http://127.0.0.1:9/in", "--event", "turn.completed",
                "--secret-env", "MAIA_TEST_HOOK_SECRET", "--yes", "--json")  # fmt: skip
    assert added.returncode == 0, added.stderr
    hook_id = json.loads(added.stdout)["result"]["webhook"]["webhookId"]
    digits = hook_id.removeprefix("hook_")[:8]
    assert _shown_id(cli, "webhook", "show", digits) == hook_id
    assert _shown_id(cli, "webhook", "show", f"hook_{digits}") == hook_id
    previewed = cli("webhook", "test", digits, "--dry-run", "--json")
    assert previewed.returncode == 0, previewed.stderr
    assert json.loads(previewed.stdout)["result"]["webhookId"] == hook_id


@pytest.mark.parametrize(
    ("argv", "path"),
    [
        (["session", "show", ""], "sessionId"),
        (["session", "create", "--project-id", "", "--title", "t"], "projectId"),
    ],
)
def test_an_empty_reference_names_its_field(cli: Cli, argv: list[str], path: str) -> None:
    """An empty reference is refused validation_failed (exit 2) naming the field it was given
    for, not reference.resolve's own `reference` field."""
    done = cli(*argv, "--json")
    assert done.returncode == 2, done.stderr
    error = json.loads(done.stdout)["error"]
    assert (error["code"], error["details"]["path"]) == ("validation_failed", path)
    assert error["message"] == f"{path}: must be 1-256 characters"


@pytest.mark.parametrize(
    ("argv", "path"),
    [
        (["session", "show", "no-such-session"], "sessionId"),
        (["routine", "show", "no-such-routine"], "routineId"),
        (["approval", "show", "abcd0123"], "approvalId"),
        (["routine", "create", "--name", "x", "--cron", "0 9 * * *", "--timezone", "UTC",
          "--project-id", "no-such-project", "--prompt", "hi", "--yes"], "template.projectId"),
    ],
)  # fmt: skip
def test_a_reference_naming_nothing_names_its_field(cli: Cli, argv: list[str], path: str) -> None:
    """A reference that resolves to nothing fails resource_not_found (exit 1) naming the
    field it was given for, in the message and in `details.path`, as a schema refusal does."""
    done = cli(*argv, "--json")
    assert done.returncode == 1, done.stderr
    error = json.loads(done.stdout)["error"]
    assert (error["code"], error["details"]["path"]) == ("resource_not_found", path)
    assert error["message"].startswith(f"{path}: ")
    assert done.stderr.startswith(f"maia: {path}: ")


@pytest.mark.parametrize(
    ("argv", "path"),
    [
        (["webhook", "redeliver", "dlv_nope"], "change.deliveryId"),
        (["webhook", "remove", "hook_" + "0" * 32], "change.webhookId"),
        (["webhook", "test", "hook_" + "0" * 32, "--dry-run"], "change.webhookId"),
    ],
)  # fmt: skip
def test_a_missing_webhook_or_delivery_names_its_field(
    cli: Cli, argv: list[str], path: str
) -> None:
    """A whole webhook or delivery ID that names nothing: the Node's resource_not_found
    names the change's field (`details.path` and the message), exit 1, nothing queued."""
    done = cli(*argv, "--yes", "--json")
    assert done.returncode == 1, done.stderr
    error = json.loads(done.stdout)["error"]
    assert (error["code"], error["details"]["path"]) == ("resource_not_found", path)
    assert error["message"].startswith(f"{path}: ")
