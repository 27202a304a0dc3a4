"""The discovery file's fields and the liveness of the process that wrote it, standard
library only (no attrs, no error type): `_discovery` builds its `Discovery` and its typed
errors on these, and the CLI's one-call path (`maia.cli._lean`) reads a Node's address
with them before it has imported anything else of Maia.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

DISCOVERY_FORMAT = "maia.node-discovery/v1"
NODE_ENV = "MAIA_NODE"
TOKEN_HEX_LENGTH = 64
MAX_RECORD_BYTES = 64 * 1024
START_TIME_TOLERANCE_S = 0.05  # psutil reports start times rounded to clock ticks


def record_fields(value: Any) -> tuple[int, float, str, str, str]:
    """(pid, startTime, url, tokenPath, nodeId) of a discovery record.

    Raises `ValueError` when `value` is not a discovery record."""
    if not isinstance(value, dict) or value.get("format") != DISCOVERY_FORMAT:
        raise ValueError("not a Maia discovery record")
    pid, start, url, token = (value.get(k) for k in ("pid", "startTime", "url", "tokenPath"))
    node_id = value.get("nodeId", "")
    if not (isinstance(pid, int) and not isinstance(pid, bool) and pid > 0):
        raise ValueError("pid must be a positive integer")
    if not isinstance(start, (int, float)) or isinstance(start, bool):
        raise ValueError("startTime must be a number")
    if not (isinstance(url, str) and isinstance(token, str) and isinstance(node_id, str)):
        raise ValueError("url, tokenPath and nodeId must be strings")
    return pid, float(start), url, token, node_id


def is_live(pid: int, start_time: float) -> bool:
    """Whether process `pid` runs and started at `start_time` (not a reused pid)."""
    started = process_start_time(pid)
    return started is not None and abs(started - start_time) <= START_TIME_TOLERANCE_S


def token_is_well_formed(text: str) -> bool:
    """Whether `text` (stripped) is a token as the Node writes it: 64 lowercase hex digits."""
    return len(text) == TOKEN_HEX_LENGTH and all(c in "0123456789abcdef" for c in text)


def _proc_start_time(pid: int) -> float | None:
    """Linux's /proc answer as psutil computes it (boot time + start ticks), without
    importing psutil (a CLI start asks this once). Raises LookupError where /proc cannot
    say (no /proc, another format)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
        boot = next(line for line in Path("/proc/stat").read_bytes().splitlines()
                    if line.startswith(b"btime "))  # fmt: skip
        fields = stat[stat.rindex(b")") + 2 :].split()
        if fields[0] == b"Z":
            return None
        return float(boot.split()[1]) + int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except FileNotFoundError:
        if Path("/proc/self/stat").exists():
            return None  # /proc works: the process is gone
        raise LookupError("no /proc") from None
    except (OSError, ValueError, IndexError, StopIteration) as error:
        raise LookupError("/proc cannot say") from error


def process_start_time(pid: int) -> float | None:
    """The start time of process `pid` (seconds since the epoch), or None if it is gone."""
    if pid > 0:
        with contextlib.suppress(LookupError):
            return _proc_start_time(pid)
    import psutil  # only where /proc cannot answer: `import maia.core` stays cheap

    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return None
        return float(process.create_time())
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return None


def default_home() -> Path:
    """`$MAIA_HOME` or `~/.maia` (the same rule the Node uses)."""
    from_env = os.environ.get("MAIA_HOME")
    return Path(from_env).expanduser().absolute() if from_env else Path.home() / ".maia"
