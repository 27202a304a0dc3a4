"""`maia config check`: every configuration file of a home checked at once, no Node needed.

The user file `<home>/config.jsonc`, and the Project file `<root>/.maia/config.jsonc` of
every Project the inventory mirror (`<home>/projects.jsonc`) lists plus any root given,
each read descriptor-first and checked whole; the answer lists every problem with its file,
line and column. Checking admits nothing.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import attrs

from ._files import FileRefused, read_beneath
from ._jsonc import JsoncError, loads_jsonc
from ._manifest import project_candidate, user_candidate
from ._problems import Problem, syntax_problem


@attrs.frozen
class CheckReport:
    """What `config check` looked at and what it found."""

    checked: tuple[str, ...]
    problems: tuple[Problem, ...]


def _inventory(home: str) -> tuple[list[dict[str, Any]], list[Problem]]:
    try:  # the home's own symlinks resolved first, as for the user file (`read_user_file`)
        file = read_beneath(os.path.realpath(home), (), "projects.jsonc")
        text = file.text()
    except FileRefused as refused:
        return [], [refused.problem]
    if text is None:
        return [], []
    try:
        entries = loads_jsonc(text, file.path)
    except JsoncError as error:
        return [], [syntax_problem(error)]
    if not isinstance(entries, list):
        return [], [Problem(file.path, "$", "must be a list of Project entries")]
    return [e for e in entries if isinstance(e, dict) and isinstance(e.get("rootPath"), str)], []


def check_configuration(home: str, roots: Sequence[str] = ()) -> CheckReport:
    """Check the user file and the Project files (the inventory's and `roots`); a Project's
    cost limit against the user file's currency, as admission does with the admitted one."""
    user = user_candidate(home)
    currency = user.user.capacity.currency if user.user is not None else None
    executors = user.user.executor_refs() if user.user is not None else None
    checked = [user.source]
    problems = list(user.problems)
    entries, inventory_problems = _inventory(home)
    problems += [p for p in inventory_problems if p not in problems]  # the home's, said once
    known = {os.path.normpath(e["rootPath"]): e for e in entries}
    for root in roots:
        path = os.path.normpath(os.path.abspath(root))
        if not os.path.isdir(path):  # a mistyped --root would read as a valid absent file
            problems.append(Problem(path, "$", "is not a folder: no Project root to check"))
            continue
        known.setdefault(path, {})
    for root, entry in known.items():
        key = entry.get("projectKey") if isinstance(entry.get("projectKey"), str) else None
        candidate = project_candidate(root, None, key, currency, executors)
        checked.append(candidate.source)
        problems += candidate.problems
    return CheckReport(tuple(checked), tuple(problems))
