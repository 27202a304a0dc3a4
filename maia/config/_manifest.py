"""Admission candidates: one canonical manifest per configuration scope, and its diff.

A candidate is what a file holds right now, read descriptor-first (`_files`) and checked
whole (every problem with its line and column). Its manifest is canonical JSON:

    {"schemaVersion": "maia.config-manifest.v1", "scope": "user" | "project",
     "projectId": ..., (project scope only)
     "source": {"path": ..., "digest": "sha256:..." | "absent"},
     "document": the checked document as written, comments and layout dropped,
                 `project:self/` resolved to `project:<project-id>/`,
     "resources": the definitions it makes (executors), each with its reference, source
                  scope, canonical locator, content digest, schema version, trust class,
     "references": the builtin: and user: definitions it names}

and its digest (sha256 over RFC 8785) is what a preview binds: a confirm rebuilds the
candidate and refuses when the digest moved. `diff` compares two documents key by key
(a list is one value), so a preview shows exactly what admission would change.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection
from typing import Any, Final, Literal

import attrs
import orjson

from maia.core import digest_json

from ._files import ConfigFile, FileRefused, read_project_file, read_user_file
from ._jsonc import JsoncError, loads_jsonc_located
from ._problems import SELF_PREFIX, Problem, dotted, syntax_problem
from ._project_config import ProjectConfig, check_project_config
from ._user import UserConfig, check_user_config

MANIFEST_SCHEMA_VERSION: Final = "maia.config-manifest.v1"
MAX_SHOWN_CHANGES: Final = 100
MAX_SHOWN_VALUE_BYTES: Final = 2048
Scope = Literal["user", "project"]


@attrs.frozen
class Candidate:
    """A configuration file as it is now: its manifest, or the problems that refuse it."""

    scope: Scope
    project_id: str | None
    source: str
    problems: tuple[Problem, ...]
    manifest: dict[str, Any] | None = None
    user: UserConfig | None = None
    project: ProjectConfig | None = None

    @property
    def digest(self) -> str:
        assert self.manifest is not None, "a refused candidate has no manifest"
        return digest_json(self.manifest)


def _document(file: ConfigFile) -> tuple[Any, Any, list[Problem]]:
    """(document, locations, problems) of a file; an absent file is the empty document."""
    try:
        text = file.text()
    except FileRefused as refused:
        return None, None, [refused.problem]
    if text is None:
        return {}, None, []
    try:
        document, locations = loads_jsonc_located(text, file.path)
    except JsoncError as error:
        return None, None, [syntax_problem(error)]
    return document, locations, []


def _resources(scope: Scope, project_id: str | None, path: str, doc: Any) -> list[Any]:
    """The definitions this file makes (its executors), each with its reference, source
    scope, canonical locator, content digest, schema version and trust class."""
    executors = doc.get("executors") if isinstance(doc, dict) else None
    if not isinstance(executors, dict):
        return []
    prefix = "user:" if scope == "user" else f"project:{project_id or 'self'}/"
    version = doc.get("schemaVersion", "maia.user-config.v1")
    return [
        {"ref": prefix + name, "kind": "executor", "sourceScope": scope,
         "locator": f"{path}#executors.{name}", "digest": digest_json(body),
         "schemaVersion": version, "trustClass": "local"}
        for name, body in sorted(executors.items())
    ]  # fmt: skip


def _references(doc: Any) -> list[dict[str, str]]:
    """The definitions this file names that other scopes define (builtin:, user:)."""
    if not isinstance(doc, dict):
        return []
    named: list[Any] = []
    for block in (doc.get("defaults"), doc.get("swarm")):
        if isinstance(block, dict):
            named += [v for k, v in block.items() if k.endswith("Ref")]
    for key in ("allowedExecutors", "allowedConnections"):
        named += doc.get(key) or []
    refs = sorted({r for r in named if isinstance(r, str) and r.startswith(("builtin:", "user:"))})
    return [{"ref": r, "sourceScope": r.partition(":")[0],
             "trustClass": "reviewed" if r.startswith("builtin:") else "local"}
            for r in refs]  # fmt: skip


def _manifest(scope: Scope, project_id: str | None, file: ConfigFile, doc: Any) -> dict[str, Any]:
    manifest: dict[str, Any] = {
        "schemaVersion": MANIFEST_SCHEMA_VERSION,
        "scope": scope,
        "source": {"path": file.path, "digest": file.digest},
        "document": doc,
        "resources": _resources(scope, project_id, file.path, doc),
        "references": _references(doc),
    }
    if project_id is not None:
        manifest["projectId"] = project_id
    return manifest


def user_candidate(home: str) -> Candidate:
    """The candidate of `<home>/config.jsonc` (never raises: problems are in the result)."""
    try:
        file = read_user_file(home)
    except FileRefused as refused:
        return Candidate("user", None, refused.problem.source, (refused.problem,))
    document, locations, problems = _document(file)
    if problems:
        return Candidate("user", None, file.path, tuple(problems))
    config, problems = check_user_config(document, file.path, locations)
    if problems:
        return Candidate("user", None, file.path, tuple(problems))
    return Candidate("user", None, file.path, (), _manifest("user", None, file, document), config)


def project_candidate(
    root: str,
    project_id: str | None,
    project_key: str | None,
    user_currency: str | None = None,
    user_executors: Collection[str] | None = None,
) -> Candidate:
    """The candidate of `<root>/.maia/config.jsonc` for the Project `project_id` (None: check
    only, `project:self/` kept). An absent file is an empty candidate: no Project settings.
    `user_currency`: the currency of the user's limits, which a cost limit must use;
    `user_executors`: the builtin: and user: executors a reference may name."""
    try:
        file = read_project_file(root)
    except FileRefused as refused:
        return Candidate("project", project_id, refused.problem.source, (refused.problem,))
    if file.data is None:
        return Candidate("project", project_id, file.path, (),
                         _manifest("project", project_id, file, None))  # fmt: skip
    document, locations, problems = _document(file)
    if problems:
        return Candidate("project", project_id, file.path, tuple(problems))
    config, problems = check_project_config(
        document, file.path, locations, project_id=project_id, expected_key=project_key,
        user_currency=user_currency, user_executors=user_executors,
    )  # fmt: skip
    if problems or config is None:
        return Candidate("project", project_id, file.path, tuple(problems))
    resolved = resolve_self(document, project_id) if project_id is not None else document
    manifest = _manifest("project", project_id, file, resolved)
    return Candidate("project", project_id, file.path, (), manifest, project=config)


def resolve_self(document: dict[str, Any], project_id: str) -> dict[str, Any]:
    """The document with `project:self/` resolved in the places references live."""

    def one(value: Any) -> Any:
        if isinstance(value, str) and value.startswith(SELF_PREFIX):
            return f"project:{project_id}/{value[len(SELF_PREFIX) :]}"
        return value

    out = dict(document)
    if isinstance(out.get("defaults"), dict):
        out["defaults"] = {k: one(v) for k, v in out["defaults"].items()}
    for key in ("allowedExecutors", "allowedConnections"):
        if isinstance(out.get(key), list):
            out[key] = [one(v) for v in out[key]]
    return out


def _leaves(value: Any, path: tuple[str, ...], out: dict[str, Any]) -> None:
    if isinstance(value, dict) and value:
        for key in sorted(value):
            _leaves(value[key], (*path, key), out)
    elif value is not None and value != {}:
        out[dotted(path)] = value


def _json(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def diff(before: Any, after: Any) -> list[dict[str, Any]]:
    """What changes from document `before` to `after`, one entry per key path, sorted:
    `{"path", "change": "added" | "removed" | "changed", "before"?, "after"?}`."""
    old: dict[str, Any] = {}
    new: dict[str, Any] = {}
    _leaves(before, (), old)
    _leaves(after, (), new)
    changes: list[dict[str, Any]] = []
    for path in sorted(old.keys() | new.keys()):
        if path not in new:
            changes.append({"path": path, "change": "removed", "before": old[path]})
        elif path not in old:
            changes.append({"path": path, "change": "added", "after": new[path]})
        elif _json(old[path]) != _json(new[path]):  # true is not 1, though Python says so
            changes.append({"path": path, "change": "changed", "before": old[path],
                            "after": new[path]})  # fmt: skip
    return changes


def _shown(value: Any) -> Any:
    text = orjson.dumps(value)
    if len(text) <= MAX_SHOWN_VALUE_BYTES:
        return value
    return f"<{len(text)} bytes of JSON, sha256:{hashlib.sha256(text).hexdigest()}>"


def shown_changes(changes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The first MAX_SHOWN_CHANGES changes, each value over MAX_SHOWN_VALUE_BYTES of JSON
    replaced by its size and digest, so a preview always fits in one API frame."""
    out = []
    for change in changes[:MAX_SHOWN_CHANGES]:
        out.append({k: _shown(v) if k in ("before", "after") else v for k, v in change.items()})
    return out
