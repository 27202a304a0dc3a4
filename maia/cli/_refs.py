"""References a person types (a title, an ID prefix) and what the CLI does with them, shared
by `execute` and the blocking path (`_quick`): a whole ID is used as given, anything else
goes through `reference.resolve`, and a reference naming several things exits 2 listing
them."""

from __future__ import annotations

from typing import Any, Final

from maia.core import MaiaError

from . import _exit
from ._render import COLUMNS, table

ID_HEX_DIGITS: Final = 32  # `maia.core.new_id`: <prefix>_<32 lowercase hex>
_HEX: Final = frozenset("0123456789abcdef")
ID_PREFIXES: Final = {"webhook": "hook_"}  # kinds whose IDs do not start with `<kind>_`


class Ambiguous(Exception):
    """A reference named more than one thing (exit 2, the candidates listed)."""

    def __init__(self, reference: str, kind: str, candidates: list[dict[str, Any]],
                 more: bool = False) -> None:  # fmt: skip
        super().__init__(reference)
        self.reference, self.kind, self.candidates = reference, kind, candidates
        self.more = more  # more matched than the candidates listed


def is_exact_id(reference: str, kind: str) -> bool:
    """Whether `reference` has the form of a whole ID of `kind` (`session_` and 32 hex
    digits): `reference.resolve` would answer it with itself, as it tries the exact ID
    first, so it is used as given (a missing one fails with the op's resource_not_found)."""
    prefix = ID_PREFIXES.get(kind, kind + "_")
    digits = reference[len(prefix) :]
    return reference.startswith(prefix) and len(digits) == ID_HEX_DIGITS and set(digits) <= _HEX


def naming_field(error: MaiaError, path: str) -> MaiaError:
    """A reference's `resource_not_found` (or `validation_failed`: an empty one, say) naming
    the field it was typed for (`path`, in the message and `details.path`), as a schema
    refusal names its field; other errors as they are. reference.resolve's own answer names
    its `reference` field: the CLI's field replaces it."""
    named = error.details.get("path", "reference" if error.code == "resource_not_found" else None)
    if error.code not in ("resource_not_found", "validation_failed") or named != "reference":
        return error
    message = error.message.removeprefix("reference: ")
    return MaiaError(error.code, f"{path}: {message}", {**error.details, "path": path})


def resolved_id(answer: dict[str, Any], reference: str, kind: str) -> str:
    """The exact ID in `reference.resolve`'s answer. Raises Ambiguous (with its candidates)
    when it resolved to none or several."""
    if answer.get("status") == "resolved" and answer.get("id"):
        return str(answer["id"])
    raise Ambiguous(reference, kind, list(answer.get("candidates") or []),
                    bool(answer.get("moreCandidates")))  # fmt: skip


def ambiguous_exit(ambiguous: Ambiguous, out: Any) -> int:
    """Say which things the reference names (stderr; --json/--jsonl: also the error on
    stdout) and return the usage exit code."""
    count = len(ambiguous.candidates)
    names = f"more than {count}" if ambiguous.more else str(count)
    out.message(f"{ambiguous.reference!r} names {names} {ambiguous.kind}s; give more of the ID:")
    out.stderr.write(table(ambiguous.candidates, COLUMNS["candidates"], out.now_ms))
    if out.fmt != "human":
        error = MaiaError(
            "validation_failed",
            f"the reference names {names} {ambiguous.kind}s",
            {"candidates": ambiguous.candidates, "count": count, "more": ambiguous.more},
        )
        out.json({"ok": False, "error": error.to_wire()})
    return _exit.USAGE


def reference_slots(
    params: dict[str, Any], references: dict[str, str]
) -> list[tuple[str, str, str]]:
    """(path, kind, text) of each reference in `params` that needs `reference.resolve`. A
    path is a wire field or a dotted path into nested objects (`change.spec.projectId`)."""
    slots: list[tuple[str, str, str]] = []
    for path, kind in references.items():
        value: Any = params
        for name in path.split("."):
            value = value.get(name) if isinstance(value, dict) else None
        if isinstance(value, str) and not is_exact_id(value, kind):
            slots.append((path, kind, value))
    return slots


def with_ids(params: dict[str, Any], ids: dict[str, str]) -> dict[str, Any]:
    """`params` with each path of `ids` set to its exact ID, copying the objects on the way
    down (the invocation's own params stay as typed)."""
    out = dict(params)
    for path, exact in ids.items():
        *outer, field = path.split(".")
        holder = out
        for name in outer:
            holder[name] = holder = dict(holder[name])
        holder[field] = exact
    return out
