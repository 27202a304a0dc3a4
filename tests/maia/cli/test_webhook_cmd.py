"""`maia webhook ...` parses into the webhook ops (no Node: parsing is pure)."""

from __future__ import annotations

import click
import pytest

from maia.cli import parse_invocation


def test_add_is_the_confirm_of_an_add_change() -> None:
    """add's flags become the add change's spec; --yes confirms without asking."""
    invocation = parse_invocation([
        "webhook", "add", "--url", "https://hooks.example/in", "--event", "turn.completed",
        "--event", "session.status.changed", "--secret-env", "MAIA_HOOK_SECRET",
        "--project-id", "project_1", "--yes",
    ])  # fmt: skip
    assert invocation.operation_id == "webhooks.change.confirm"
    assert invocation.yes is True
    assert invocation.params["change"] == {
        "kind": "add",
        "spec": {"url": "https://hooks.example/in", "secretEnv": "MAIA_HOOK_SECRET",
                 "eventTypes": ["turn.completed", "session.status.changed"],
                 "projectId": "project_1"},
    }  # fmt: skip
    assert invocation.params["commandId"].startswith("command_")


def test_dry_run_calls_the_preview() -> None:
    """--dry-run previews only."""
    invocation = parse_invocation(["webhook", "remove", "hook_" + "a" * 32, "--dry-run"])
    assert invocation.operation_id == "webhooks.change.preview"
    assert invocation.params["change"] == {"kind": "remove", "webhookId": "hook_" + "a" * 32}


@pytest.mark.parametrize(
    ("argv", "change"),
    [
        (["webhook", "test", "hook_1", "--revision", "3"],
         {"kind": "test", "webhookId": "hook_1", "expectedRevision": 3}),
        (["webhook", "redeliver", "dlv_1"], {"kind": "redeliver", "deliveryId": "dlv_1"}),
    ],
)  # fmt: skip
def test_target_commands(argv: list[str], change: dict[str, object]) -> None:
    """test/redeliver name their target; --revision pins the webhook's revision."""
    assert parse_invocation(argv).params["change"] == change


def test_list_and_show_are_the_reads() -> None:
    """list and show call webhooks.list and webhooks.show."""
    assert parse_invocation(["webhook", "list"]).operation_id == "webhooks.list"
    show = parse_invocation(["webhook", "show", "hook_1", "--json"])
    assert (show.operation_id, show.params, show.output) == (
        "webhooks.show", {"webhookId": "hook_1"}, "json")  # fmt: skip


def test_list_pages() -> None:
    """list takes --limit and --cursor (webhooks.list pages: removed webhooks stay)."""
    assert parse_invocation(["webhook", "list"]).params == {}
    paged = parse_invocation(["webhook", "list", "--include-removed", "--limit", "5",
                              "--cursor", "c1.x"])  # fmt: skip
    assert paged.params == {"includeRemoved": True, "limit": 5, "cursor": "c1.x"}


def test_show_pages_and_filters() -> None:
    """show takes --state and --cursor (webhooks.show pages its deliveries)."""
    show = parse_invocation(["webhook", "show", "hook_1", "--state", "failed", "--cursor", "c"])
    assert show.params == {"webhookId": "hook_1", "deliveryState": "failed", "cursor": "c"}


def test_missing_flags_are_usage_errors() -> None:
    """add without --url is a usage error naming it."""
    with pytest.raises(click.UsageError, match="url"):
        parse_invocation(["webhook", "add", "--event", "x.y", "--secret-env", "S"])
