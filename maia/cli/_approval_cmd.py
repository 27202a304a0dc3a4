"""`maia approval allow APPROVAL [--remember]` and `maia approval deny APPROVAL [--message
TEXT]`: shortcuts (`_shortcuts`) onto `approval.respond` with its `decision` filled in, so
each has its own `--help` and is listed by `maia approval --help`, and the registry's
generic mutation (commandId, receipt, output) does the work."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import click

from ._shortcuts import Shortcut


def _approval() -> click.Argument:
    return click.Argument(["approval"], metavar="APPROVAL")


def _allow_params() -> list[click.Parameter]:
    return [
        _approval(),
        click.Option(["--remember/--no-remember"], default=False,
                     help="Allow for the rest of the conversation (the harness's own "
                     "always-allow)."),
    ]  # fmt: skip


def _deny_params() -> list[click.Parameter]:
    return [_approval(), click.Option(["--message"], help="Told to the agent with the denial.")]


def _allow(values: Mapping[str, Any]) -> dict[str, Any]:
    return {"approvalId": values["approval"], "decision": "allow",
            "remember": bool(values.get("remember"))}  # fmt: skip


def _deny(values: Mapping[str, Any]) -> dict[str, Any]:
    wire: dict[str, Any] = {"approvalId": values["approval"], "decision": "deny"}
    if values.get("message") is not None:
        wire["message"] = values["message"]
    return wire


_REFERENCES: Final = {"approvalId": "approval"}
APPROVAL_SHORTCUTS: Final = (
    Shortcut(("approval", "allow"), "approval.respond",
             "Allow a pending approval (APPROVAL: its ID or an ID prefix).",
             _allow_params, _allow, _REFERENCES),
    Shortcut(("approval", "deny"), "approval.respond",
             "Deny a pending approval (APPROVAL: its ID or an ID prefix).",
             _deny_params, _deny, _REFERENCES),
)  # fmt: skip
