"""What an agent adapter hands its harness: environment, options, and where the binary is.

The Node already filtered the worker's environment (the executor's `env` names plus a basic
set), so the harness gets the worker's own environment minus the worker protocol's
variables (it never speaks the protocol) and minus `CLAUDECODE` (set when Maia itself runs
inside Claude Code; the CLI then refuses to start), plus the variables that turn off the
CLIs' telemetry, update checks and other non-essential traffic. `MAIA_WORKER_ATTEMPT` is
kept: the supervisor's sweep finds escaped descendants by it.
"""

from __future__ import annotations

import importlib.util
import os
import shutil

# typing costs a worker ~20 ms of start-up: import it for the type checker only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

DROPPED = ("MAIA_WORKER_EPOCH", "MAIA_WORKER_HEARTBEAT_MS", "CLAUDECODE", "CLAUDE_CODE_ENTRYPOINT")

QUIET = {
    # Claude Code: no telemetry, error reports, auto-update, feedback or other side traffic.
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_BUG_COMMAND": "1",
    "DISABLE_NON_ESSENTIAL_MODEL_CALLS": "1",
    "CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY": "1",
    # Codex: no OpenTelemetry export (the config file turns off update checks and analytics).
    "OTEL_SDK_DISABLED": "true",
    "NO_UPDATE_NOTIFIER": "1",
}


def harness_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The harness's environment: the worker's, cleaned, quietened, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if k not in DROPPED}
    env.update(QUIET)
    env.update(extra or {})
    return env


def bundled_claude() -> str | None:
    """The Claude Code binary the `claude-agent-sdk` package bundles, if installed."""
    return _package_file("claude_agent_sdk", "_bundled", "claude")


def bundled_codex() -> str | None:
    """The Codex binary of the `openai-codex-cli-bin` package, if installed."""
    return _package_file("codex_cli_bin", "bin", "codex")


def _package_file(package: str, *parts: str) -> str | None:
    # find_spec locates the package without importing it (the SDK pulls in pydantic).
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    for location in (spec.submodule_search_locations or []) if spec else []:
        path = os.path.join(location, *parts)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def resolve_command(configured: str, bundled: str | None, name: str) -> str:
    """The binary to run: the configured `command` (a path, or a name looked up on PATH),
    else the bundled one, else `name` on PATH. Raises `FileNotFoundError` naming what was
    tried and how to install it."""
    if configured:
        if os.sep in configured:
            found = configured if os.access(configured, os.X_OK) else None
        else:
            found = shutil.which(configured)
        if found:
            return found
        raise FileNotFoundError(command_problem(configured) or f"{configured!r} was not found")
    if bundled:
        return bundled
    found = shutil.which(name)
    if found:
        return found
    raise FileNotFoundError(
        f"no {name} binary: {name!r} was not found on PATH; install it, or set the executor's"
        " `command`"
    )


def command_problem(command: str) -> str | None:
    """Why `command` cannot run (a name not on PATH, a path that is missing, a file that is
    not executable), or None when it looks runnable."""
    if os.sep not in command:
        return None if shutil.which(command) else f"{command!r} was not found on PATH"
    if os.path.isdir(command) or (os.path.exists(command) and not os.access(command, os.X_OK)):
        return f"{command!r} is not executable"
    return None if os.path.exists(command) else f"{command!r} was not found"
