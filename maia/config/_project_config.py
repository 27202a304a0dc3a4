"""The Project configuration document (`<root>/.maia/config.jsonc`, ProjectConfigV1).

Every field of the spec's ProjectConfigV1 is checked, plus Maia's `executors` block (the
Project's own executors, referenced as `project:<project-id>/<name>`). A Project file may
write `project:self/<name>` for its own definitions: `check_project_config` with the
Project's ID resolves every such reference once, so the admitted document (and every API,
event and receipt built from it) only ever holds `project:<project-id>/<name>`. A Project
file can reference builtin:, user: and its own project: definitions, never another
Project's. Limits only narrow (see `_limits`), so each limit key is optional here.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, Final, Literal

import attrs

from ._deprecated_keys import without_deprecated_keys
from ._jsonc import Locations, Path
from ._limits import DEFAULT_WALL_TIME_MS, read_limits
from ._problems import SELF_PREFIX, Checker, Problem, raise_if_any
from ._projects import PROJECT_KEY_RE
from ._retention import RetentionPolicy, read_retention
from ._user import MODEL_RE, ExecutorConfig, read_executors

PROJECT_SCHEMA_VERSION: Final = "maia.project-config.v1"
MAX_ALLOWED: Final = 256
NESTED_AGENTS_MODES: Final = ("disabled", "nearest-explicit")
_TOP: Final = {
    "schemaVersion", "projectKey", "defaults", "limits", "context", "allowedConnections",
    "allowedExecutors", "maintenance", "retention", "executors",
}  # fmt: skip
_ALL_SCOPES: Final = ("builtin", "user", "project")


@attrs.frozen
class ContextSettings:
    nested_agents_mode: Literal["disabled", "nearest-explicit"] = "disabled"
    max_instruction_tokens: int = 8_000
    max_skill_index_tokens: int = 2_000


@attrs.frozen
class Maintenance:
    enabled: bool = False
    auto_apply_safe_changes: bool = False


@attrs.frozen
class ProjectConfig:
    """A checked ProjectConfigV1 (references resolved when the Project's ID was given)."""

    project_key: str
    agent_ref: str | None = None
    connection_ref: str | None = None
    model_ref: str | None = None
    executor_ref: str | None = None
    limits: Mapping[str, Any] = attrs.field(factory=dict)  # the limits it sets, by attribute
    context: ContextSettings = ContextSettings()
    allowed_connections: tuple[str, ...] | None = None
    allowed_executors: tuple[str, ...] | None = None
    maintenance: Maintenance | None = None
    retention: RetentionPolicy | None = None
    executors: Mapping[str, ExecutorConfig] = attrs.field(factory=dict)


class _Refs:
    """Checks a reference of the Project file and resolves `project:self/`."""

    def __init__(self, checker: Checker, project_id: str | None) -> None:
        self.checker = checker
        self.project_id = project_id

    def __call__(self, value: Any, path: Path, scopes: tuple[str, ...] = _ALL_SCOPES) -> Any:
        ref = self.checker.ref(value, path, scopes, allow_self="project" in scopes)
        if ref is None:
            return None
        if ref.startswith(SELF_PREFIX):
            if self.project_id is None:
                return ref  # checked without a Project (maia config check): kept as written
            return f"project:{self.project_id}/{ref[len(SELF_PREFIX) :]}"
        if ref.startswith("project:") and self.project_id is not None:
            owner = ref[len("project:") :].partition("/")[0]
            if owner != self.project_id:
                self.checker.report(path, "a Project file can name only its own project: "
                                    "definitions (write project:self/<id>)")  # fmt: skip
                return None
        return ref

    def listed(self, value: Any, path: Path, scopes: tuple[str, ...]) -> tuple[str, ...]:
        if not isinstance(value, list) or len(value) > MAX_ALLOWED:
            self.checker.report(path, f"must be a list of at most {MAX_ALLOWED} references")
            return ()
        found = [self(v, (*path, i), scopes) for i, v in enumerate(value)]
        return tuple(dict.fromkeys(r for r in found if r is not None))


def _context(checker: Checker, value: Any) -> ContextSettings:
    path = ("context",)
    body = checker.obj(value, path, {"nestedAgentsMode", "maxInstructionTokens",
                                     "maxSkillIndexTokens"})  # fmt: skip
    default = ContextSettings()
    mode = default.nested_agents_mode
    if "nestedAgentsMode" in body:
        found = checker.choice(body["nestedAgentsMode"], (*path, "nestedAgentsMode"),
                               NESTED_AGENTS_MODES)  # fmt: skip
        mode = found or mode  # type: ignore[assignment]
    tokens = [
        checker.integer(body.get(key, fallback), (*path, key), 0, 1_000_000, fallback)
        for key, fallback in (("maxInstructionTokens", default.max_instruction_tokens),
                              ("maxSkillIndexTokens", default.max_skill_index_tokens))
    ]  # fmt: skip
    return ContextSettings(mode, tokens[0], tokens[1])


def _maintenance(checker: Checker, value: Any) -> Maintenance:
    path = ("maintenance",)
    body = checker.obj(value, path, {"enabled", "autoApplySafeChanges"})
    flags: list[bool] = []
    for key in ("enabled", "autoApplySafeChanges"):
        raw = checker.required(body, key, path)
        flags.append(False if raw is None else checker.boolean(raw, (*path, key), False))
    return Maintenance(flags[0], flags[1])


def check_project_config(
    document: Any,
    source: str = ".maia/config.jsonc",
    locations: Locations | None = None,
    *,
    project_id: str | None = None,
    expected_key: str | None = None,
    user_currency: str | None = None,
    user_executors: Collection[str] | None = None,
) -> tuple[ProjectConfig | None, list[Problem]]:
    """The ProjectConfig of a parsed document and every problem found (empty: valid).

    With `project_id`, `project:self/` references are resolved; with `expected_key`,
    `projectKey` must equal the Project's key in the inventory; with `user_currency`, a
    daily cost limit must be in the user's currency (a narrowing must be comparable); with
    `user_executors` (the builtin: and user: executor references the user configuration
    knows), an executor reference to one of those scopes must name one of them.
    """
    document = without_deprecated_keys(document, source)
    checker = Checker(source, locations)
    refs = _Refs(checker, project_id)
    body = checker.obj(document, (), _TOP)
    # `null` is a value, not an absent key: it is reported like any other wrong value
    version = checker.required(body, "schemaVersion", ())
    if "schemaVersion" in body and version != PROJECT_SCHEMA_VERSION:
        checker.report(("schemaVersion",), f'must be "{PROJECT_SCHEMA_VERSION}"')
    checker.required(body, "projectKey", ())
    key = None
    if "projectKey" in body:
        key = checker.string(body["projectKey"], ("projectKey",), PROJECT_KEY_RE)
    if key is not None and expected_key is not None and key != expected_key:
        checker.report(("projectKey",), f"is {key!r} but the inventory says {expected_key!r}")
    defaults = checker.obj(body.get("defaults", {}), ("defaults",),
                           {"agentRef", "connectionRef", "modelRef", "executorRef"})  # fmt: skip
    agent = refs(defaults["agentRef"], ("defaults", "agentRef")) if "agentRef" in defaults else None
    connection = None
    if "connectionRef" in defaults:
        connection = refs(defaults["connectionRef"], ("defaults", "connectionRef"))
    model = None
    if "modelRef" in defaults:
        model = checker.string(defaults["modelRef"], ("defaults", "modelRef"), MODEL_RE)
    executor = None
    if "executorRef" in defaults:
        executor = refs(defaults["executorRef"], ("defaults", "executorRef"))
    limits = read_limits(checker, body.get("limits", {}), ("limits",))
    currency = limits.get("currency")
    if user_currency is not None and currency is not None and currency != user_currency:
        checker.report(("limits", "currency"), f"is {currency} but the user's limits are in "
                       f"{user_currency}: a narrowing must be in the same currency")  # fmt: skip
    context = _context(checker, body.get("context", {}))
    allowed_connections = allowed_executors = None
    if "allowedConnections" in body:
        allowed_connections = refs.listed(body["allowedConnections"], ("allowedConnections",),
                                          _ALL_SCOPES)  # fmt: skip
    if "allowedExecutors" in body:
        allowed_executors = refs.listed(body["allowedExecutors"], ("allowedExecutors",),
                                        _ALL_SCOPES)  # fmt: skip
    maintenance = _maintenance(checker, body["maintenance"]) if "maintenance" in body else None
    retention = read_retention(checker, body["retention"]) if "retention" in body else None
    wall = limits.get("max_wall_time_ms_per_activation") or DEFAULT_WALL_TIME_MS
    executors = read_executors(checker, body.get("executors", {}), wall, ("executors",))
    _check_own_executors(checker, project_id, executors, executor, allowed_executors)
    if user_executors is not None:
        _check_user_executors(checker, user_executors, executor, allowed_executors)
    if checker.problems or key is None:
        return None, checker.problems
    config = ProjectConfig(
        key, agent, connection, model, executor, limits, context, allowed_connections,
        allowed_executors, maintenance, retention, executors,
    )  # fmt: skip
    return config, []


def _check_own_executors(
    checker: Checker,
    project_id: str | None,
    executors: Mapping[str, ExecutorConfig],
    default: str | None,
    allowed: tuple[str, ...] | None,
) -> None:
    """A reference to one of the Project's own executors must name one its file defines."""
    own = f"project:{project_id}/" if project_id is not None else SELF_PREFIX
    named: list[tuple[Path, str]] = []
    if default is not None:
        named.append((("defaults", "executorRef"), default))
    named += [(("allowedExecutors", i), ref) for i, ref in enumerate(allowed or ())]
    for path, ref in named:
        if ref.startswith(own) and ref[len(own) :] not in executors:
            checker.report(path, f"names no executor of this file (executors: "
                           f"{', '.join(sorted(executors)) or 'none'})")  # fmt: skip
    if default is not None and allowed is not None and default not in allowed:
        checker.report(("defaults", "executorRef"), "is not in allowedExecutors")


def _check_user_executors(
    checker: Checker, known: Collection[str], default: str | None, allowed: tuple[str, ...] | None
) -> None:
    """A builtin: or user: executor the file names must be one the user configuration knows
    (a typo such as builtin:ehco would otherwise be admitted, and every session.create of
    the Project refused)."""
    named: list[tuple[Path, str]] = [(("defaults", "executorRef"), default)] if default else []
    named += [(("allowedExecutors", i), ref) for i, ref in enumerate(allowed or ())]
    for path, ref in named:
        if ref.startswith(("builtin:", "user:")) and ref not in known:
            checker.report(path, f"names no executor the user configuration defines "
                           f"(known: {', '.join(known)})")  # fmt: skip


def parse_project_config(
    document: Any,
    source: str = ".maia/config.jsonc",
    locations: Locations | None = None,
    *,
    project_id: str | None = None,
    expected_key: str | None = None,
) -> ProjectConfig:
    """Like `check_project_config`, raising `configuration_invalid` listing every problem."""
    config, problems = check_project_config(
        document, source, locations, project_id=project_id, expected_key=expected_key
    )
    raise_if_any(problems)
    assert config is not None
    return config
