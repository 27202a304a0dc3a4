"""`maia webhook add|list|show|remove|test|redeliver`: the webhook ops as people type them.

    maia webhook add --url https://hooks.example/in --event turn.completed \\
        --event session.status.changed --secret-env MAIA_HOOK_SECRET [--project-id P] [--yes]
    maia webhook list                      maia webhook show HOOK_ID
    maia webhook remove HOOK_ID [--yes]    maia webhook test HOOK_ID [--yes]
    maia webhook redeliver DELIVERY_ID [--yes]

Each change is `webhooks.change.confirm` (preview, the summary, a question, the confirm;
`--dry-run` previews only); `--revision N` pins the webhook's revision, otherwise the
preview's revision is the one the confirm must still find.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import click

from ._shortcuts import Shortcut

CONFIRM: Final = "webhooks.change.confirm"
_HOOK: Final = {"change.webhookId": "webhook"}  # HOOK_ID: an ID, or a prefix of 4+ hex digits


def _add_params() -> list[click.Parameter]:
    return [
        click.Option(["--url"], required=True, help="http(s) URL of the receiver."),
        click.Option(["--event", "events"], multiple=True, required=True,
                     help="An event type to deliver (repeat it; * for every type)."),
        click.Option(["--secret-env"], required=True, metavar="NAME",
                     help="The Node's environment variable holding the whsec_ secret."),
        click.Option(["--project-id"], metavar="PROJECT",
                     help="Only this Project's events (Project ID, ID prefix or key)."),
        click.Option(["--session-id"], metavar="SESSION",
                     help="Only this Session's events (Session ID, ID prefix or title)."),
        click.Option(["--description"], help="For people."),
    ]  # fmt: skip


def _add(values: Mapping[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {"url": values["url"], "eventTypes": list(values["events"]),
                            "secretEnv": values["secret_env"]}  # fmt: skip
    for flag, wire in (("project_id", "projectId"), ("session_id", "sessionId"),
                       ("description", "description")):  # fmt: skip
        if values.get(flag) is not None:
            spec[wire] = values[flag]
    return {"change": {"kind": "add", "spec": spec}}


def _target_params(name: str, doc: str) -> Any:
    def params() -> list[click.Parameter]:
        return [
            click.Argument([name.lower()], metavar=name),
            click.Option(["--revision"], type=click.INT,
                         help="The webhook's revision (default: the one the preview reads)."),
        ]  # fmt: skip

    return params


def _list_params() -> list[click.Parameter]:
    return [
        click.Option(["--include-removed"], is_flag=True, help="Also list removed webhooks."),
        click.Option(["--limit"], type=click.IntRange(1, 100), default=None,
                     help="Page size (default 100)."),
        click.Option(["--cursor"], metavar="CURSOR", default=None,
                     help="Continue from the previous page's cursor."),
    ]  # fmt: skip


def _list(values: Mapping[str, Any]) -> dict[str, Any]:
    params: dict[str, Any] = {}
    if values.get("include_removed"):
        params["includeRemoved"] = True
    for name in ("limit", "cursor"):
        if values.get(name) is not None:
            params[name] = values[name]
    return params


def _show_params() -> list[click.Parameter]:
    return [
        click.Argument(["hook_id"], metavar="HOOK_ID"),
        click.Option(["--state", "delivery_state"], default=None,
                     type=click.Choice(["pending", "succeeded", "failed", "cancelled"]),
                     help="Only deliveries in this state (failed: what to redeliver)."),
        click.Option(["--cursor"], metavar="CURSOR", default=None,
                     help="Continue with older deliveries from the previous page's cursor."),
    ]  # fmt: skip


def _show(values: Mapping[str, Any]) -> dict[str, Any]:
    params: dict[str, Any] = {"webhookId": values["hook_id"]}
    if values.get("delivery_state") is not None:
        params["deliveryState"] = values["delivery_state"]
    if values.get("cursor") is not None:
        params["cursor"] = values["cursor"]
    return params


def _target(kind: str, argument: str, wire: str) -> Any:
    def build(values: Mapping[str, Any]) -> dict[str, Any]:
        change: dict[str, Any] = {"kind": kind, wire: values[argument]}
        if values.get("revision") is not None:
            change["expectedRevision"] = values["revision"]
        return {"change": change}

    return build


WEBHOOK_SHORTCUTS: Final = (
    Shortcut(("webhook", "add"), CONFIRM, "Add a webhook (previews, then asks).",
             _add_params, _add, references={"change.spec.projectId": "project",
                                            "change.spec.sessionId": "session"}),
    Shortcut(("webhook", "list"), "webhooks.list", "List the webhooks, oldest first.",
             _list_params, _list),
    Shortcut(("webhook", "show"), "webhooks.show",
             "Show a webhook and its deliveries (newest 20, then --cursor).",
             _show_params, _show, references={"webhookId": "webhook"}),
    Shortcut(("webhook", "remove"), CONFIRM, "Remove a webhook (its pending deliveries stop).",
             _target_params("HOOK_ID", "The webhook."), _target("remove", "hook_id", "webhookId"),
             references=_HOOK),
    Shortcut(("webhook", "test"), CONFIRM, "Send the webhook a maia.ping delivery.",
             _target_params("HOOK_ID", "The webhook."), _target("test", "hook_id", "webhookId"),
             references=_HOOK),
    Shortcut(("webhook", "redeliver"), CONFIRM, "Queue one delivery again (same webhook-id).",
             _target_params("DELIVERY_ID", "The delivery."),
             _target("redeliver", "delivery_id", "deliveryId")),
)  # fmt: skip
