"""How a client finds a running Node: the discovery file and the token it points at.

The Node writes `node.json` in its home (0600): its pid, the process start time (from
psutil, so a reused pid is told apart), its URL and the path of its token file. A record
whose pid is dead, or alive with another start time, is stale: the Node that wrote it is
gone. Both the Node (to replace a stale file) and the SDK (to find the Node) read it here,
so the SDK never imports the Node and the Node never imports the SDK.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs

from ._errors import MaiaError
from ._node_record import (
    DISCOVERY_FORMAT,
    MAX_RECORD_BYTES,
    NODE_ENV,
    TOKEN_HEX_LENGTH,
    default_home,
    is_live,
    process_start_time,
    record_fields,
    token_is_well_formed,
)

__all__ = [
    "DISCOVERY_FORMAT", "NODE_ENV", "TOKEN_HEX_LENGTH", "Discovery", "default_home",
    "find_live_node", "process_start_time", "read_discovery", "read_token",
]  # fmt: skip


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
        pid, start, url, token, node_id = record_fields(value)
        return cls(pid=pid, start_time=start, url=url, token_path=token, node_id=node_id)

    def is_live(self) -> bool:
        """Whether the process that wrote this record still runs (same pid, same start)."""
        return is_live(self.pid, self.start_time)


def read_discovery(path: Path) -> Discovery | None:
    """The record in `path`, or None when there is no file or it is unreadable/malformed."""
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    if len(raw) > MAX_RECORD_BYTES:
        return None
    try:
        return Discovery.from_json(json.loads(raw))
    except (ValueError, RecursionError):
        return None


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
    if not token_is_well_formed(text):
        raise MaiaError(
            "unauthenticated", f"the token file {path} is malformed", {"path": str(path)}
        )
    return text
