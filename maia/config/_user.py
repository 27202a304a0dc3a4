"""The user configuration document (`~/.maia/config.jsonc`, UserConfigV1) and its executors.

The spec's UserConfigV1 carries `swarm.capacity` (CapacityLimitsV1); Maia adds two top-level
keys, documented in docs/sessions.md: `executors` (named worker launchers: `echo`, `exec`, or
the agent adapters `claude-code`, `codex` and `acp` of docs/agents.md)
and `sessions` (how long an idle worker is kept). Every key is optional: an absent file or
an empty object is the defaults, and the built-in `echo` executor needs no configuration.
Unknown keys and wrong types are refused with the key's path (and line and column for
syntax), so a typo never silently falls back to a default.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final, Literal

import attrs

from maia.core import MaiaError, is_iana_time_zone, parse_definition_ref

from ._agent_executors import AGENT_KINDS, ALL_AGENT_KEYS, read_agent_options
from ._deprecated_keys import without_deprecated_keys
from ._jsonc import JsoncError, Locations, loads_jsonc_located
from ._limits import DEFAULT_WALL_TIME_MS, CapacityLimits, read_limits
from ._observability import ObservabilityPolicy, read_observability
from ._problems import Checker, Problem, raise_if_any, syntax_problem

SCHEMA_VERSION: Final = "maia.user-config.v1"
EXECUTOR_NAME_PATTERN: Final = r"^[a-z][a-z0-9-]{0,63}$"
ENV_NAME_PATTERN: Final = r"^[A-Za-z_][A-Za-z0-9_]{0,127}$"
MODEL_REF_PATTERN: Final = r"^[A-Za-z0-9][A-Za-z0-9._:/@-]{0,255}$"
MAX_ARGV: Final = 256
MAX_ENV_NAMES: Final = 128
MAX_EXECUTORS: Final = 256
_EXEC_KEYS: Final = frozenset({"kind", "argv", "env", "wallTimeMs", "promptNewline",
                               "maxOutputBytes"})  # fmt: skip
_EXECUTOR_RE: Final = re.compile(EXECUTOR_NAME_PATTERN)
_ENV_RE: Final = re.compile(ENV_NAME_PATTERN)
MODEL_RE: Final = re.compile(MODEL_REF_PATTERN)


@attrs.frozen
class ExecutorConfig:
    """How to launch a Session's worker: the echo reference worker, or a command per prompt."""

    name: str
    kind: Literal["echo", "exec", "claude-code", "codex", "acp"]
    argv: tuple[str, ...] = ()  # exec: the command run for each prompt; acp: the agent
    env: tuple[str, ...] = ()  # environment variable names passed through from the Node
    wall_time_ms: int = DEFAULT_WALL_TIME_MS  # exec: one prompt's limit
    prompt_newline: bool = True  # exec: end the prompt on stdin with a newline
    # agent kinds: the worker's initialize options by their config names (command, model, …)
    options: Mapping[str, str] = attrs.field(factory=dict)
    # exec: the output one run keeps (stdout and stderr bytes); the smaller of this and the
    # Project's limits.maxOutputBytesPerTool applies. None: the limit alone.
    max_output_bytes: int | None = None


BUILTIN_EXECUTORS: Final = {"echo": ExecutorConfig("echo", "echo")}
WRITTEN_KEYS: Final = (
    ("swarm", "defaultTimezone"), ("sessions", "workerIdleMs"), ("webhooks", "allowAddresses"),
)  # fmt: skip


@attrs.frozen
class SessionSettings:
    """Maia's `sessions` block: how long a worker with nothing to do is kept alive, and how
    long an agent's approval waits before it expires (None, the default: it never does)."""

    worker_idle_ms: int = 60_000
    approval_timeout_ms: int | None = None


@attrs.frozen
class WebhookSettings:
    """Maia's `webhooks` block: CIDRs the SSRF guard admits although they are not public
    (`allowAddresses`, e.g. 127.0.0.1/32 for a local receiver; docs/webhooks.md)."""

    allow_addresses: tuple[str, ...] = ()


@attrs.frozen
class UserConfig:
    """The parsed `config.jsonc` (all defaults when the file is absent)."""

    capacity: CapacityLimits = attrs.field(factory=CapacityLimits)
    executors: Mapping[str, ExecutorConfig] = attrs.field(factory=dict)
    sessions: SessionSettings = SessionSettings()
    default_timezone: str = "UTC"
    administrator_agent_ref: str | None = None
    connection_ref: str | None = None  # defaults.connectionRef (kept for later)
    model_ref: str | None = None  # defaults.modelRef (kept for later)
    observability: ObservabilityPolicy | None = None
    capacity_set: Mapping[str, Any] = attrs.field(factory=dict)  # the limits the file sets
    webhooks: WebhookSettings = WebhookSettings()
    # the keys of WRITTEN_KEYS the file sets: config.show says `user` for them even when the
    # value is the default one
    written: frozenset[str] = frozenset()

    def executor_refs(self) -> tuple[str, ...]:
        """The references of every executor this configuration knows: builtin:, then user:."""
        return (*(f"builtin:{n}" for n in BUILTIN_EXECUTORS),
                *(f"user:{n}" for n in sorted(self.executors)))  # fmt: skip

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
            known = list(self.executor_refs())
            raise MaiaError(
                "configuration_invalid",
                f"configuration is invalid: no executor {ref} (known: {', '.join(known)})",
                {"detail": f"no executor {ref}", "executor": ref, "known": known},
            )
        return found


def is_time_zone(name: str) -> bool:
    """Whether `name` is an IANA time zone this machine knows (`Europe/Paris`, `UTC`)."""
    return is_iana_time_zone(name)


def read_executor(
    checker: Checker, name: str, value: Any, wall_default: int, path: tuple[str, ...]
) -> ExecutorConfig | None:
    """One entry of an `executors` block (the user's, or a Project's)."""
    at = (*path, name)
    if _EXECUTOR_RE.fullmatch(name) is None:  # not match: its `$` passes a final newline
        checker.report(at, f"an executor name must match {EXECUTOR_NAME_PATTERN}")
        return None
    body = checker.obj(value, at)  # its keys are checked below, once, by what its kind takes
    kind = body.get("kind")
    if isinstance(kind, str) and kind in AGENT_KINDS:
        return _agent_executor(checker, name, kind, body, wall_default, at)
    checker.obj(
        body, at, set(_EXEC_KEYS if kind in ("echo", "exec") else _EXEC_KEYS | ALL_AGENT_KEYS)
    )
    env = checker.strings(body.get("env", []), (*at, "env"), MAX_ENV_NAMES, _ENV_RE)
    if kind == "echo":  # the reference worker; `env` passes variables through (MAIA_ECHO_LOG)
        for key in ("argv", "wallTimeMs", "promptNewline", "maxOutputBytes"):
            if key in body:
                checker.report((*at, key), "is not an option of an echo executor")
        return ExecutorConfig(name, "echo", env=env)
    if kind != "exec":
        checker.report((*at, "kind"), 'must be "echo", "exec", "claude-code", "codex" or "acp"')
        return None
    if "argv" not in body:
        checker.report((*at, "argv"), "is required for an exec executor")
    argv = checker.strings(body.get("argv", ["-"]), (*at, "argv"), MAX_ARGV, non_empty=True)
    wall = checker.integer(
        body.get("wallTimeMs", wall_default), (*at, "wallTimeMs"), 1000, 7 * 24 * 3600_000,
        wall_default,
    )  # fmt: skip
    newline = checker.boolean(body.get("promptNewline", True), (*at, "promptNewline"), True)
    most = None
    if "maxOutputBytes" in body:
        most = checker.integer(body["maxOutputBytes"], (*at, "maxOutputBytes"), 1, 1 << 30, 1)
    return ExecutorConfig(name, "exec", argv, env, wall, newline, max_output_bytes=most)


def _agent_executor(
    checker: Checker, name: str, kind: str, body: dict[str, Any], wall_default: int,
    at: tuple[str, ...],
) -> ExecutorConfig:  # fmt: skip
    options = read_agent_options(checker, kind, body, at)
    argv: tuple[str, ...] = ()
    if kind == "acp":
        if "argv" not in body:
            checker.report((*at, "argv"), "is required for an acp executor")
        argv = checker.strings(body.get("argv", ["-"]), (*at, "argv"), MAX_ARGV, non_empty=True)
    env = checker.strings(body.get("env", []), (*at, "env"), MAX_ENV_NAMES, _ENV_RE)
    wall = checker.integer(
        body.get("wallTimeMs", wall_default), (*at, "wallTimeMs"), 1000, 7 * 24 * 3600_000,
        wall_default,
    )  # fmt: skip
    return ExecutorConfig(name, kind, argv, env, wall, options=options)  # type: ignore[arg-type]


def read_executors(
    checker: Checker, value: Any, wall_default: int, path: tuple[str, ...]
) -> dict[str, ExecutorConfig]:
    body = checker.obj(value, path)
    if len(body) > MAX_EXECUTORS:
        checker.report(path, f"at most {MAX_EXECUTORS} executors")
    found = (read_executor(checker, n, v, wall_default, path) for n, v in body.items())
    return {e.name: e for e in found if e is not None}


def check_user_config(
    document: Any, source: str = "config.jsonc", locations: Locations | None = None
) -> tuple[UserConfig, list[Problem]]:
    """The UserConfig of a parsed document and every problem found in it (empty: valid)."""
    document = without_deprecated_keys(document, source)
    checker = Checker(source, locations)
    top = {"schemaVersion", "swarm", "defaults", "observability", "executors", "sessions"}
    top.add("webhooks")
    body = checker.obj(document, (), top)
    if body.get("schemaVersion", SCHEMA_VERSION) != SCHEMA_VERSION:
        checker.report(("schemaVersion",), f'must be "{SCHEMA_VERSION}"')
    swarm = checker.obj(
        body.get("swarm", {}), ("swarm",), {"administratorAgentRef", "defaultTimezone", "capacity"}
    )
    capacity_set = read_limits(checker, swarm.get("capacity", {}), ("swarm", "capacity"))
    capacity = CapacityLimits(**{k: v for k, v in capacity_set.items() if v is not None})
    timezone = "UTC"
    if "defaultTimezone" in swarm:
        zone = checker.string(swarm["defaultTimezone"], ("swarm", "defaultTimezone"))
        if zone is not None and not is_time_zone(zone):
            checker.report(("swarm", "defaultTimezone"), f"{zone!r} is not an IANA time zone")
        elif zone is not None:
            timezone = zone
    admin = None
    if "administratorAgentRef" in swarm:
        admin = checker.ref(swarm["administratorAgentRef"], ("swarm", "administratorAgentRef"),
                            ("user",))  # fmt: skip
    defaults = checker.obj(body.get("defaults", {}), ("defaults",), {"connectionRef", "modelRef"})
    connection = model = None
    if "connectionRef" in defaults:
        connection = checker.ref(defaults["connectionRef"], ("defaults", "connectionRef"),
                                 ("user",))  # fmt: skip
    if "modelRef" in defaults:
        model = checker.string(defaults["modelRef"], ("defaults", "modelRef"), MODEL_RE)
    observability = None
    if "observability" in body:
        observability = read_observability(checker, body["observability"], ("observability",))
    sessions_body = checker.obj(body.get("sessions", {}), ("sessions",),
                                {"workerIdleMs", "approvalTimeoutMs"})  # fmt: skip
    idle = checker.integer(sessions_body.get("workerIdleMs", 60_000),
                           ("sessions", "workerIdleMs"), 0, 24 * 3600_000, 60_000)  # fmt: skip
    approval_timeout = None
    if "approvalTimeoutMs" in sessions_body:
        approval_timeout = checker.integer(sessions_body["approvalTimeoutMs"],
                                           ("sessions", "approvalTimeoutMs"), 1000,
                                           7 * 24 * 3600_000, 0) or None  # fmt: skip
    executors = read_executors(
        checker, body.get("executors", {}), capacity.max_wall_time_ms_per_activation,
        ("executors",),
    )  # fmt: skip
    webhooks = _webhooks(checker, body.get("webhooks", {}))
    blocks = {"swarm": swarm, "sessions": sessions_body, "webhooks": _webhooks_body(body)}
    written = frozenset(f"{b}.{k}" for b, k in WRITTEN_KEYS if k in blocks[b])
    config = UserConfig(
        capacity, executors, SessionSettings(idle, approval_timeout), timezone, admin,
        connection, model,
        observability, capacity_set, webhooks, written,
    )  # fmt: skip
    return config, checker.problems


def _webhooks_body(body: dict[str, Any]) -> dict[str, Any]:
    """The `webhooks` block as written ({} when absent or not an object)."""
    value = body.get("webhooks", {})
    return value if isinstance(value, dict) else {}


def _webhooks(checker: Checker, value: Any) -> WebhookSettings:
    """`webhooks.allowAddresses`: CIDRs the webhook SSRF guard admits (docs/webhooks.md)."""
    body = checker.obj(value, ("webhooks",), {"allowAddresses"})
    path = ("webhooks", "allowAddresses")
    cidrs = checker.strings(body.get("allowAddresses", []), path, 64)
    for index, cidr in enumerate(cidrs):
        try:
            ipaddress.ip_network(cidr, strict=True)
        except ValueError as error:
            checker.report((*path, index), f"must be a CIDR ({error})")
    return WebhookSettings(cidrs)


def parse_user_config(
    document: Any, source: str = "config.jsonc", locations: Locations | None = None
) -> UserConfig:
    """The UserConfig of a parsed document. Raises `configuration_invalid` naming the first
    problem's key (details: `path`, and `problems` listing every one)."""
    config, problems = check_user_config(document, source, locations)
    raise_if_any(problems)
    return config


def read_text(path: Path) -> str | None:
    """The file's text (None when absent). Raises `configuration_invalid` when unreadable."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as error:
        raise_if_any([Problem(str(path), "$", f"cannot be read: {error}")])
        raise AssertionError from error  # unreachable: raise_if_any raised


def parse_user_text(text: str, source: str) -> UserConfig:
    """Parse and check the text of a user file. Raises `configuration_invalid` with the line
    and column of every problem."""
    try:
        document, locations = loads_jsonc_located(text, source)
    except JsoncError as error:
        raise_if_any([syntax_problem(error)])
        raise AssertionError from error  # unreachable
    return parse_user_config(document, source, locations)


def load_user_config(path: Path) -> UserConfig:
    """Read `path` (absent: the defaults). Raises `configuration_invalid` with line:column."""
    text = read_text(path)
    return UserConfig() if text is None else parse_user_text(text, str(path))
