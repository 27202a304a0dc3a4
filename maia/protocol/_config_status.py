"""A configuration scope's state (`ConfigScopeStatus`), apart from the configuration ops:
`node.status` reports it for every file, and loading it should not load those ops."""

# ruff: noqa: RUF009  (field() returns attrs.field: a field definition, not a shared default)

from __future__ import annotations

from typing import Literal

import attrs

from maia.core._fields import field

from ._common import count_field, digest_field, id_field, path_field, timestamp_field

ConfigScope = Literal["user", "project"]
FileState = Literal["admitted", "differs", "never-admitted", "invalid"]
MAX_PROBLEMS = 100


@attrs.frozen
class ConfigProblem:
    """One mistake in a configuration file, with its place."""

    source: str = path_field("The file.")
    path: str = field(doc="The key's path ($ for the document).", min_length=1, max_length=512)
    detail: str = field(doc="What is wrong.", min_length=1, max_length=1024)
    line: int | None = field(doc="1-based line.", default=None, minimum=1)
    column: int | None = field(doc="1-based column.", default=None, minimum=1)


@attrs.frozen
class ConfigScopeStatus:
    """A scope's file against what is admitted for it."""

    scope: ConfigScope = field(doc="user or project.")
    source: str = path_field("The file this scope is read from.")
    file: FileState = field(
        doc="admitted (the file is what is admitted), differs (edited since: admit it to "
        "apply), never-admitted, or invalid (problems lists why)."
    )
    revision: int = count_field("The scope's revision (a Project's revision; 0: none yet).")
    project_id: str | None = id_field("The Project (project scope).", default=None)
    snapshot_id: str | None = id_field("The admitted snapshot.", default=None)
    manifest_digest: str | None = digest_field("The admitted manifest.", default=None)
    admitted_at: str | None = timestamp_field("When it was admitted.", default=None)
    problems: tuple[ConfigProblem, ...] = field(
        doc="What is wrong with the file now.", factory=tuple, max_items=MAX_PROBLEMS
    )
