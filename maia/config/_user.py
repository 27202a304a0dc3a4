"""The user configuration document (`~/.maia/config.jsonc`, UserConfigV1) and its executors.

The spec's UserConfigV1 carries `swarm.capacity` (CapacityLimitsV1); Maia adds two top-level
keys, documented in docs/sessions.md: `executors` (named worker launchers: `echo` or `exec`)
and `sessions` (how long an idle worker is kept). Every key is optional: an absent file or
an empty object is the defaults, and the built-in `echo` executor needs no configuration.
Unknown keys and wrong types are refused with the key's path (and line and column for
syntax), so a typo never silently falls back to a default.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, Literal

import attrs

from maia.core import MAX_SESSION_PENDING_TURNS, MaiaError, parse_definition_ref

from ._jsonc import JsoncError, loads_jsonc

SCHEMA_VERSION: Final = "maia.user-config.v1"
EXECUTOR_NAME_PATTERN: Final = r"^[a-z][a-z0-9-]{0,63}$"
ENV_NAME_PATTERN: Final = r"^[A-Za-z_][A-Za-z0-9_]{0,127}$"
MAX_ARGV: Final = 256
MAX_ENV_NAMES: Final = 128
DEFAULT_WALL_TIME_MS: Final = 3_600_000
_EXECUTOR_RE: Final = re.compile(EXECUTOR_NAME_PATTERN)
_ENV_RE: Final = re.compile(ENV_NAME_PATTERN)


@attrs.frozen
class CapacityLimits:
    """CapacityLimitsV1. This slice enforces maxLiveSessions and maxQueuedMessages."""

    max_live_sessions: int = 64  # Sessions with a running worker
    max_concurrent_activations: int = 64
    max_children_per_session: int = 16
    max_agent_depth: int = 4
    max_pending_routine_ticks: int = 64
    max_queued_messages: int = MAX_SESSION_PENDING_TURNS  # pending turns per Session
    max_input_tokens_per_activation: int = 200_000
    max_output_tokens_per_activation: int = 32_000
    max_wall_time_ms_per_activation: int = DEFAULT_WALL_TIME_MS
    max_output_bytes_per_tool: int = 65_536


# wire name -> (attribute, minimum, maximum)
_CAPACITY_KEYS: Final = {
    "maxLiveSessions": ("max_live_sessions", 1, 100_000),
    "maxConcurrentActivations": ("max_concurrent_activations", 1, 100_000),
    "maxChildrenPerSession": ("max_children_per_session", 0, 1024),
    "maxAgentDepth": ("max_agent_depth", 1, 64),
    "maxPendingRoutineTicks": ("max_pending_routine_ticks", 0, 100_000),
    "maxQueuedMessages": ("max_queued_messages", 1, MAX_SESSION_PENDING_TURNS),
    "maxInputTokensPerActivation": ("max_input_tokens_per_activation", 1, 10**9),
    "maxOutputTokensPerActivation": ("max_output_tokens_per_activation", 1, 10**9),
    "maxWallTimeMsPerActivation": ("max_wall_time_ms_per_activation", 1000, 7 * 24 * 3600_000),
    "maxOutputBytesPerTool": ("max_output_bytes_per_tool", 1, 1 << 30),
}


@attrs.frozen
class ExecutorConfig:
    """How to launch a Session's worker: the echo reference worker, or a command per prompt."""

    name: str
    kind: Literal["echo", "exec"]
    argv: tuple[str, ...] = ()  # exec: the command run for each prompt (prompt on stdin)
    env: tuple[str, ...] = ()  # environment variable names passed through from the Node
    wall_time_ms: int = DEFAULT_WALL_TIME_MS  # exec: one prompt's limit
    prompt_newline: bool = True  # exec: end the prompt on stdin with a newline


BUILTIN_EXECUTORS: Final = {"echo": ExecutorConfig("echo", "echo")}


@attrs.frozen
class SessionSettings:
    """Maia's `sessions` block: how long a worker with nothing to do is kept alive."""

    worker_idle_ms: int = 60_000


@attrs.frozen
class UserConfig:
    """The parsed `config.jsonc` (all defaults when the file is absent)."""

    capacity: CapacityLimits = CapacityLimits()
    executors: Mapping[str, ExecutorConfig] = attrs.field(factory=dict)
    sessions: SessionSettings = SessionSettings()
    default_timezone: str = "UTC"
    administrator_agent_ref: str | None = None

    def executor(self, ref: str) -> ExecutorConfig:
        """The executor a reference names: `builtin:echo`, or `user:<name>` from `executors`.

        Raises `configuration_invalid` for a reference nothing configures.
        """
        parsed = parse_definition_ref(ref, "executor")
        found: ExecutorConfig | None = None
        if parsed.scope == "builtin":
            found = BUILTIN_EXECUTORS.get(parsed.id)
        elif parsed.scope == "user":
            found = self.executors.get(parsed.id)
        if found is None:
            known = [f"builtin:{n}" for n in BUILTIN_EXECUTORS] + [
                f"user:{n}" for n in sorted(self.executors)
            ]
            raise MaiaError(
                "configuration_invalid",
                f"configuration is invalid: no executor {ref} (known: {', '.join(known)})",
                {"detail": f"no executor {ref}", "executor": ref, "known": known},
            )
        return found


def _invalid(path: str, message: str, source: str) -> MaiaError:
    return MaiaError(
        "configuration_invalid",
        f"configuration is invalid: {source}: {path}: {message}",
        {"detail": f"{path}: {message}", "path": path, "source": source},
    )


class _Reader:
    """Walks the parsed document, refusing unknown keys and wrong types with their path."""

    def __init__(self, source: str) -> None:
        self.source = source

    def obj(self, value: Any, path: str, allowed: set[str]) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise _invalid(path, "must be an object", self.source)
        for key in value:
            if key not in allowed:
                raise _invalid(f"{path}.{key}", "unknown key", self.source)
        return value

    def integer(self, value: Any, path: str, low: int, high: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise _invalid(path, f"must be an integer {low}..{high}", self.source)
        return value

    def string(self, value: Any, path: str, pattern: re.Pattern[str] | None = None) -> str:
        if not isinstance(value, str) or not value or len(value) > 4096:
            raise _invalid(path, "must be a non-empty string", self.source)
        if pattern is not None and pattern.match(value) is None:
            raise _invalid(path, f"must match {pattern.pattern}", self.source)
        return value

    def strings(self, value: Any, path: str, limit: int, pattern: re.Pattern[str] | None = None,
                *, non_empty: bool = False) -> tuple[str, ...]:  # fmt: skip
        if not isinstance(value, list) or len(value) > limit or (non_empty and not value):
            size = "1.." if non_empty else "at most "
            raise _invalid(path, f"must be a list of {size}{limit} strings", self.source)
        return tuple(self.string(v, f"{path}[{i}]", pattern) for i, v in enumerate(value))


def _capacity(reader: _Reader, value: Any) -> CapacityLimits:
    body = reader.obj(value, "swarm.capacity", {*_CAPACITY_KEYS, "maxDailyCostMicros", "currency"})
    values = {
        attr: reader.integer(body[wire], f"swarm.capacity.{wire}", low, high)
        for wire, (attr, low, high) in _CAPACITY_KEYS.items()
        if wire in body
    }
    return CapacityLimits(**values)


def _executor(reader: _Reader, name: str, value: Any, wall_default: int) -> ExecutorConfig:
    path = f"executors.{name}"
    if _EXECUTOR_RE.match(name) is None:
        raise _invalid(path, f"an executor name must match {EXECUTOR_NAME_PATTERN}", reader.source)
    body = reader.obj(value, path, {"kind", "argv", "env", "wallTimeMs", "promptNewline"})
    kind = body.get("kind")
    if kind == "echo":  # the reference worker; `env` passes variables through (MAIA_ECHO_LOG)
        reader.obj(body, path, {"kind", "env"})
        env = reader.strings(body.get("env", []), f"{path}.env", MAX_ENV_NAMES, _ENV_RE)
        return ExecutorConfig(name, "echo", env=env)
    if kind != "exec":
        raise _invalid(f"{path}.kind", 'must be "echo" or "exec"', reader.source)
    if "argv" not in body:
        raise _invalid(f"{path}.argv", "is required for an exec executor", reader.source)
    argv = reader.strings(body["argv"], f"{path}.argv", MAX_ARGV, non_empty=True)
    env = reader.strings(body.get("env", []), f"{path}.env", MAX_ENV_NAMES, _ENV_RE)
    wall = body.get("wallTimeMs", wall_default)
    wall = reader.integer(wall, f"{path}.wallTimeMs", 1000, 7 * 24 * 3600_000)
    newline = body.get("promptNewline", True)
    if not isinstance(newline, bool):
        raise _invalid(f"{path}.promptNewline", "must be true or false", reader.source)
    return ExecutorConfig(name, "exec", argv, env, wall, newline)


def parse_user_config(document: Any, source: str = "config.jsonc") -> UserConfig:
    """The UserConfig of a parsed document. Raises `configuration_invalid` naming the key."""
    reader = _Reader(source)
    top = {"schemaVersion", "swarm", "defaults", "observability", "executors", "sessions"}
    body = reader.obj(document, "$", top)
    version = body.get("schemaVersion", SCHEMA_VERSION)
    if version != SCHEMA_VERSION:
        raise _invalid("schemaVersion", f'must be "{SCHEMA_VERSION}"', source)
    swarm = reader.obj(
        body.get("swarm", {}), "swarm", {"administratorAgentRef", "defaultTimezone", "capacity"}
    )
    capacity = _capacity(reader, swarm.get("capacity", {}))
    timezone = reader.string(swarm.get("defaultTimezone", "UTC"), "swarm.defaultTimezone")
    admin = swarm.get("administratorAgentRef")
    if admin is not None and not (isinstance(admin, str) and admin.startswith("user:")):
        raise _invalid("swarm.administratorAgentRef", "must be user:<id>", source)
    reader.obj(body.get("defaults", {}), "defaults", {"connectionRef", "modelRef"})
    sessions_body = reader.obj(body.get("sessions", {}), "sessions", {"workerIdleMs"})
    idle = reader.integer(
        sessions_body.get("workerIdleMs", 60_000), "sessions.workerIdleMs", 0, 24 * 3600_000
    )
    executors_body = reader.obj(
        body.get("executors", {}), "executors", set(body.get("executors", {}))
    )
    executors = {
        name: _executor(reader, name, value, capacity.max_wall_time_ms_per_activation)
        for name, value in executors_body.items()
    }
    return UserConfig(capacity, executors, SessionSettings(idle), timezone, admin)


def load_user_config(path: Path) -> UserConfig:
    """Read `path` (absent: the defaults). Raises `configuration_invalid` with line:column."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return UserConfig()
    except (OSError, UnicodeDecodeError) as error:
        raise _invalid("$", f"cannot be read: {error}", str(path)) from error
    try:
        document = loads_jsonc(text, str(path))
    except JsoncError as error:
        raise MaiaError(
            "configuration_invalid",
            f"configuration is invalid: {error}",
            {"detail": error.reason, "source": str(path), "line": error.line,
             "column": error.column},
        ) from error  # fmt: skip
    return parse_user_config(document, str(path))
