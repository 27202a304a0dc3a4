"""`--schema` / `--schema=input` on registered resource commands (spec: Schema-only inspection).

Schema mode needs only the command path: no IDs, revisions, Node or credentials. Only
`--schema`, `--schema=output`, `--schema=input` and a redundant `--json` are taken; anything
else (operands, `--node`, streaming and confirmation flags, a spaced `--schema input`, a
second selector) is refused before any effect, with empty stdout and a bounded message that
names an option but never echoes a value.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Final, Literal

SCHEMA_VALUES: Final = {
    "--schema": "output",
    "--schema=output": "output",
    "--schema=input": "input",
}
MESSAGE_MAX: Final = 200


class Refusal(Exception):
    """A command line refused before any effect (exit 2, stdout empty)."""

    def __init__(self, message: str) -> None:
        super().__init__(message[:MESSAGE_MAX])
        self.message = message[:MESSAGE_MAX]


def _shown(token: str) -> str:
    """An option's name without its value, bounded; operands are never echoed."""
    if not token.startswith("-"):
        return "an operand"
    return repr(token.split("=", 1)[0][:40])


def wants_schema(tokens: Sequence[str]) -> bool:
    """Whether schema mode applies: a `--schema` selector before any `--`."""
    head = list(tokens[: tokens.index("--")]) if "--" in tokens else list(tokens)
    return any(t == "--schema" or t.startswith("--schema=") for t in head)


def schema_alias(args: Sequence[str]) -> list[str]:
    """A command that runs a registered op under another name asks about that op: a
    consequential pair's stem (`routine disable --schema`) its confirm's documents (its
    `--json` answer), a shortcut (`webhook list --schema`) its op's; with `--dry-run`, the
    preview's (the one answer `--dry-run` prints), as `config admit` does. Other lines are
    unchanged. Without it a stem took `--schema` as one of its options and ran the preview
    (spec: never fall through to execution), and a shortcut refused it as unknown."""
    if not wants_schema(args):
        return list(args)
    words = 0
    while words < len(args) and not args[words].startswith("-"):
        words += 1
    path = tuple(args[:words])
    from maia.protocol import REGISTRY

    from ._shortcuts import SHORTCUTS, preview_id_of

    if not path or ".".join(path) in REGISTRY:
        return list(args)
    shortcut = next((s for s in SHORTCUTS() if s.path == path), None)
    confirm = REGISTRY.get(shortcut.operation_id if shortcut else ".".join((*path, "confirm")))
    if confirm is None or (shortcut is None and confirm.confirmation != "required"):
        return list(args)
    operation_id, rest = confirm.operation_id, list(args[words:])
    head = rest[: rest.index("--")] if "--" in rest else rest
    preview = preview_id_of(operation_id) if confirm.confirmation == "required" else None
    if "--dry-run" in head and preview is not None and preview in REGISTRY:
        operation_id = preview
        rest.remove("--dry-run")
    return [*operation_id.split("."), *rest]


def parse_schema_tokens(tokens: Sequence[str]) -> Literal["input", "output"]:
    """Which document the tokens ask for. Raises Refusal for anything schema mode refuses."""
    selectors = [t for t in tokens if t == "--schema" or t.startswith("--schema=")]
    if len(selectors) > 1:
        raise Refusal("--schema was given more than once")
    which = SCHEMA_VALUES.get(selectors[0])
    if which is None:
        raise Refusal("--schema takes no value but input or output (--schema=input)")
    seen_json = False
    for token in tokens:
        if token in selectors:
            continue
        if token == "--json" and not seen_json:
            seen_json = True
            continue
        raise Refusal(f"--schema inspects the command only: {_shown(token)} is not accepted here")
    return "input" if which == "input" else "output"


def render_schema(operation_id: str, which: Literal["input", "output"]) -> str:
    """The exact text printed: one ASCII JSON document and a newline, the same on every run."""
    from maia.protocol import schema_document

    return json.dumps(schema_document(operation_id, which), indent=2) + "\n"
