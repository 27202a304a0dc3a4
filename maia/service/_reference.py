"""reference.resolve: what a person typed → one exact ID, or the candidates.

An exact ID wins outright. Otherwise the matches of an ID prefix of at least four
hexadecimal digits (with or without the type prefix: `3fa2`, `session_3fa2`, `hook_3fa2`)
and of an exact title (Sessions), project key (Projects) or name (routines),
case-insensitively (Unicode case folding for text that is not ASCII), are gathered
together: more than one distinct ID is `ambiguous` with at most ten candidates
(`moreCandidates` when an eleventh matched); none is
`resource_not_found`.
"""

from __future__ import annotations

import re
import sqlite3
from typing import Final

from maia.protocol import (
    ReferenceCandidate,
    ReferenceResolveInput,
    ReferenceResolveOutput,
)

from ._context import ServiceContext, not_found

MIN_PREFIX: Final = 4
MAX_CANDIDATES: Final = 10
_HEX: Final = re.compile(r"^[0-9a-f]{4,32}$")

# kind -> (table, id column, prefix, label expression)
_KINDS: Final = {
    "session": ("sessions", "session_id", "session_", "title"),
    "project": ("projects", "project_id", "project_", "project_key"),
    "turn": ("turns", "turn_id", "turn_", "NULL"),
    "routine": ("routines", "routine_id", "routine_", "name"),
    "webhook": ("webhooks", "webhook_id", "hook_", "NULL"),
    "approval": ("approvals", "approval_id", "approval_", "NULL"),
}
_UNSCOPED: Final = frozenset({"turn", "approval"})  # no project_id column: projectId is ignored


def _resolve(conn: sqlite3.Connection, params: ReferenceResolveInput) -> list[tuple[str, str]]:
    table, column, prefix, label = _KINDS[params.kind]
    scope, scope_args = "", []
    if params.project_id is not None and params.kind not in _UNSCOPED:
        scope, scope_args = " AND project_id = ?", [params.project_id]
    select = f"SELECT {column}, {label} FROM {table} WHERE "
    text = params.reference
    exact = conn.execute(select + f"{column} = ?{scope}", [text, *scope_args]).fetchall()
    if exact:
        return exact
    # Prefix and title matches are gathered together: a title that is also another
    # resource's ID prefix names both, which is ambiguous, not the first kind found.
    found: dict[str, str] = {}
    digits = text[len(prefix) :] if text.startswith(prefix) else text
    if _HEX.fullmatch(digits.lower()):
        for row_id, row_label in conn.execute(
            select + f"{column} LIKE ? ESCAPE '\\'{scope} LIMIT ?",
            [prefix.replace("_", "\\_") + digits.lower() + "%", *scope_args, MAX_CANDIDATES + 1],
        ):
            found.setdefault(row_id, row_label)
    if label != "NULL":
        # SQLite's lower() folds ASCII only: a title typed with other letters ("émile" for
        # "Émile") is compared casefolded, in Python, row by row (a scan, as lower() is).
        ascii_only = text.isascii()
        if not ascii_only:
            conn.create_function("maia_casefold", 1, _casefold, deterministic=True)
        match = f"lower({label}) = lower(?)" if ascii_only else f"maia_casefold({label}) = ?"
        for row_id, row_label in conn.execute(
            select + f"{match}{scope} LIMIT ?",
            [text if ascii_only else text.casefold(), *scope_args, MAX_CANDIDATES + 1],
        ):
            found.setdefault(row_id, row_label)
    return list(found.items())[: MAX_CANDIDATES + 1]


def _casefold(value: object) -> str | None:
    return value.casefold() if isinstance(value, str) else None


async def reference_resolve(
    ctx: ServiceContext, params: ReferenceResolveInput
) -> ReferenceResolveOutput:
    """Raises `resource_not_found` when nothing matches."""
    found = await ctx.read(lambda c: _resolve(c, params))
    if not found:
        raise not_found(params.kind, params.reference)
    if len(found) == 1:
        return ReferenceResolveOutput(
            status="resolved", kind=params.kind, id=found[0][0], candidates=()
        )
    candidates = tuple(
        ReferenceCandidate(id=row[0], label=row[1]) for row in found[:MAX_CANDIDATES]
    )
    return ReferenceResolveOutput(status="ambiguous", kind=params.kind, id=None,
                                  candidates=candidates,
                                  more_candidates=len(found) > MAX_CANDIDATES)  # fmt: skip
