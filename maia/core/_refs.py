"""Human definition references: `builtin:<id>`, `user:<id>`, `project:<project-id>/<id>`.

Agents, Skills, Routines, evaluators, Connections and executors are named by these, never by
a bare ID. `project:self/<id>` is a Project-file shorthand that admission resolves once; it is
invalid on the wire, so it is refused here.
"""

from __future__ import annotations

import re
from typing import Final, Literal

import attrs

from ._errors import MaiaError
from ._ids import WIRE_ID_MAX_LENGTH

DEFINITION_REF_PATTERN: Final = (
    r"^(?:builtin|user):[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$"
    r"|^project:(?!self/)[A-Za-z0-9][A-Za-z0-9._:-]{0,127}/[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$"
)
_PART: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]*")

RefScope = Literal["builtin", "user", "project"]


@attrs.frozen
class DefinitionRef:
    """A parsed definition reference; `project_id` is set only for the `project` scope."""

    scope: RefScope
    id: str
    project_id: str | None = None

    def __str__(self) -> str:
        if self.scope == "project":
            return f"project:{self.project_id}/{self.id}"
        return f"{self.scope}:{self.id}"


def _part_ok(text: str) -> bool:
    return len(text) <= WIRE_ID_MAX_LENGTH and _PART.fullmatch(text) is not None


def parse_definition_ref(text: str, field: str = "ref") -> DefinitionRef:
    """Parse a definition reference.

    Raises `validation_failed` naming `field` for anything but the three forms (a bare ID,
    an unknown scope, an empty part, `project:self/...`, a missing or extra `/`).
    """
    scope, sep, rest = text.partition(":")
    ref: DefinitionRef | None = None
    if sep and scope in ("builtin", "user") and "/" not in rest and _part_ok(rest):
        ref = DefinitionRef(scope, rest)  # type: ignore[arg-type]
    elif sep and scope == "project":
        project_id, slash, ident = rest.partition("/")
        if (
            slash
            and project_id != "self"
            and "/" not in ident
            and _part_ok(project_id)
            and _part_ok(ident)
        ):
            ref = DefinitionRef("project", ident, project_id)
    if ref is None:
        raise MaiaError(
            "validation_failed",
            f"{field}: must be builtin:<id>, user:<id> or project:<project-id>/<id>",
            {"path": field},
        )
    return ref


def format_definition_ref(ref: DefinitionRef) -> str:
    """The text of a reference (the inverse of `parse_definition_ref`)."""
    return str(ref)
