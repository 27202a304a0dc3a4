"""How a client finds a running Node: the discovery file and the token it points at.

The Node writes `node.json` in its home (0600): its pid, the process start time (from
psutil, so a reused pid is told apart), its URL and the path of its token file. A record
whose pid is dead, or alive with another start time, is stale: the Node that wrote it is
gone. Both the Node (to replace a stale file) and the SDK (to find the Node) read it here,
so the SDK never imports the Node and the Node never imports the SDK.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

import attrs

from ._errors import MaiaError

DISCOVERY_FORMAT = "maia.node-discovery/v1"
NODE_ENV = "MAIA_NODE"
TOKEN_HEX_LENGTH = 64
_START_TIME_TOLERANCE_S = 0.05  # psutil reports start times rounded to clock ticks


@attrs.frozen
class Discovery:
    """What a running Node publishes about itself."""

    pid: int
    start_time: float
    url: str
    token_path: str
    node_id: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "format": DISCOVERY_FORMAT,
            "pid": self.pid,
            "startTime": self.start_time,
            "url": self.url,
            "tokenPath": self.token_path,
            "nodeId": self.node_id,
        }

    @classmethod
    def from_json(cls, value: Any) -> Discovery:
        """Raises `ValueError` when `value` is not a discovery record."""
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
        return cls(pid=pid, start_time=float(start), url=url, token_path=token, node_id=node_id)

    def is_live(self) -> bool:
        """Whether the process that wrote this record still runs (same pid, same start)."""
        started = process_start_time(self.pid)
        return started is not None and abs(started - self.start_time) <= _START_TIME_TOLERANCE_S


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


def read_discovery(path: Path) -> Discovery | None:
    """The record in `path`, or None when there is no file or it is unreadable/malformed."""
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    if len(raw) > 64 * 1024:
        return None
    try:
        return Discovery.from_json(json.loads(raw))
    except (ValueError, RecursionError):
        return None


def default_home() -> Path:
    """`$MAIA_HOME` or `~/.maia` (the same rule the Node uses)."""
    from_env = os.environ.get("MAIA_HOME")
    return Path(from_env).expanduser().absolute() if from_env else Path.home() / ".maia"


def find_live_node(home: Path | None = None) -> Discovery:
    """The live Node of `home` (default: `$MAIA_HOME` or `~/.maia`).

    Raises `MaiaError(unavailable)` when no discovery file exists or it is stale.
    """
    folder = home if home is not None else default_home()
    record = read_discovery(folder / "node.json")
    if record is None:
        raise MaiaError(
            "unavailable",
            f"no Maia Node is running for {folder} (no discovery file); "
            "start one with `maia node start`",
            {"target": "node", "home": str(folder)},
        )
    if not record.is_live():
        raise MaiaError(
            "unavailable",
            f"no Maia Node is running for {folder}: the discovery file names pid "
            f"{record.pid}, which has exited (stale)",
            {"target": "node", "home": str(folder), "pid": record.pid},
        )
    return record


def read_token(path: Path) -> str:
    """The bearer token kept in `path`.

    Raises `MaiaError(unauthenticated)` when the file is missing, unreadable or malformed.
    """
    try:
        text = path.read_text("ascii").strip()
    except (OSError, UnicodeDecodeError) as error:
        raise MaiaError(
            "unauthenticated",
            f"cannot read the Node's token file {path}: {error}",
            {"path": str(path)},
        ) from error
    if len(text) != TOKEN_HEX_LENGTH or any(c not in "0123456789abcdef" for c in text):
        raise MaiaError(
            "unauthenticated", f"the token file {path} is malformed", {"path": str(path)}
        )
    return text
