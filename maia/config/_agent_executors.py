"""The agent adapters' executors in `executors` (docs/agents.md): claude-code, codex and acp.

Each kind takes `env` and `wallTimeMs` like `exec`, plus its own keys; a key with a closed set
of values is refused outside it with the allowed ones named. The values reach the worker as
its initialize options by their config names (`command`, `model`, `permissionMode`, ...).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ._problems import Checker

PERMISSION_MODES: Final = ("default", "manual", "acceptEdits", "auto", "bypassPermissions",
                           "dontAsk", "plan")  # fmt: skip
# The agent adapters' keys besides kind, env and wallTimeMs; a tuple lists the allowed values.
AGENT_KEYS: Final[Mapping[str, Mapping[str, tuple[str, ...] | None]]] = {
    "claude-code": {
        "command": None,
        "model": None,
        "permissionMode": PERMISSION_MODES,
    },
    "codex": {
        "command": None,
        "model": None,
        "approvalPolicy": ("untrusted", "on-request", "never"),
        "sandbox": ("read-only", "workspace-write", "danger-full-access"),
    },
    "acp": {},
}
ALL_AGENT_KEYS: Final = frozenset(key for keys in AGENT_KEYS.values() for key in keys)


def read_agent_options(
    checker: Checker, kind: str, body: dict[str, Any], at: tuple[str, ...]
) -> dict[str, str]:
    """The kind's own keys of one executor entry, each checked (unknown keys reported)."""
    keys = AGENT_KEYS[kind]
    argv_key = ("argv",) if kind == "acp" else ()
    checker.obj(body, at, {"kind", "env", "wallTimeMs", *keys, *argv_key})
    options: dict[str, str] = {}
    for key, allowed in keys.items():
        if key not in body:
            continue
        value = checker.string(body[key], (*at, key))
        if value is None:
            continue
        if allowed is not None and value not in allowed:
            checker.report((*at, key), "must be one of " + ", ".join(allowed))
            continue
        options[key] = value
    if options.get("permissionMode") == "default":
        del options["permissionMode"]  # the CLI's own default
    return options


AGENT_KINDS: Final = frozenset(AGENT_KEYS)
