"""Friendly commands that project onto one registry op: `maia webhook add --url ...` is
`webhooks.change.confirm` with `{"change": {"kind": "add", "spec": {...}}}`.

A `Shortcut` names its command path, the op it calls, its own flags, how their values
become the op's wire input, and which of those take a human reference (resolved as anywhere
else). The command tree (`_invocation.command_tree`) adds each as a click command beside the
registry's own, so parsing, `--help` and completion work as for any op, and execution is the
op's (a consequential op still previews, shows the summary and asks: `--yes` confirms without
asking). A shortcut onto `X.confirm` also takes `--dry-run`, which calls `X.preview` instead
and changes nothing. Kinds add their shortcuts to `SHORTCUTS`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

import attrs
import click


@attrs.frozen
class Shortcut:
    """One friendly command: its path, the op, its click parameters and the wire builder."""

    path: tuple[str, ...]
    operation_id: str
    help: str
    params: Callable[[], list[click.Parameter]] = attrs.field(eq=False)
    build: Callable[[Mapping[str, Any]], dict[str, Any]] = attrs.field(eq=False)
    # dotted wire path -> reference kind, resolved to an exact ID before the call
    references: Mapping[str, str] = attrs.field(factory=dict, eq=False)


def preview_id_of(operation_id: str) -> str | None:
    """`X.preview` for `X.confirm` (what `--dry-run` calls), else None."""
    stem, _, last = operation_id.rpartition(".")
    return f"{stem}.preview" if last == "confirm" and stem else None


def _all() -> tuple[Shortcut, ...]:
    from ._approval_cmd import APPROVAL_SHORTCUTS
    from ._hello_cmd import NODE_SHORTCUTS
    from ._webhook_cmd import WEBHOOK_SHORTCUTS

    return (*NODE_SHORTCUTS, *WEBHOOK_SHORTCUTS, *APPROVAL_SHORTCUTS)


SHORTCUTS: Final[Callable[[], tuple[Shortcut, ...]]] = _all
