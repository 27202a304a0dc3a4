"""The repository block of a Project (`normalizedRemote`, `objectFormat`, `expectedHead`),
read from the repository's own files: `.git/config` and `.git/HEAD`, no `git` process.

`.git` is either the repository directory or a file `gitdir: <path>` (a worktree or a
submodule; its `commondir` leads to the shared config). The remote is `origin`, else the
first remote the config names; a repository with no remote is identified by its root
(`local:<root>`). `expectedHead` is the branch HEAD names (`refs/heads/main`), or the
commit of a detached HEAD. The identity that must be unique among Projects is the
normalized remote together with that ref: two clones of one remote on one branch are one
checkout twice, and are refused.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Final, Literal

import attrs

MAX_GIT_FILE: Final = 1 << 20
_SECTION: Final = re.compile(r'^\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]\s*(.*)$')
# Matched with fullmatch: `re.match` with `$` would also take a text ending in "\n".
_SCP: Final = re.compile(r"(?:([^@/]+)@)?([^:/]+):(?!//)(.+)")
_SCHEME: Final = re.compile(r"([a-z][a-z0-9+.-]*)://(?:[^@/]*@)?([^/]*)(/.*)?", re.IGNORECASE)


@attrs.frozen
class Repository:
    """The repository block of a ProjectInventoryEntryV1."""

    normalized_remote: str
    object_format: Literal["sha1", "sha256"]
    expected_head: str | None = None

    @property
    def identity(self) -> str:
        """What must be unique among Projects: the remote plus the ref."""
        return f"{self.normalized_remote} {self.expected_head or ''}"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "normalizedRemote": self.normalized_remote,
            "objectFormat": self.object_format,
        }
        if self.expected_head is not None:
            out["expectedHead"] = self.expected_head
        return out


def parse_git_config(text: str) -> dict[tuple[str, str | None], dict[str, str]]:
    """Sections of a git config file: (section, subsection) → {key: last value}. Keys and
    section names are case-insensitive (lowered); subsections are kept as written."""
    sections: dict[tuple[str, str | None], dict[str, str]] = {}
    current: dict[str, str] | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        match = _SECTION.match(line)
        if match:
            name, sub = match.group(1).lower(), match.group(2)
            if sub is None and "." in name:  # [remote.origin], the old spelling
                name, _, sub = name.partition(".")
            current = sections.setdefault((name, sub), {})
            line = match.group(3).strip()
            if not line:
                continue
        if current is None:
            continue
        key, sep, value = line.partition("=")
        current[key.strip().lower()] = _value(value) if sep else "true"
    return sections


def _value(text: str) -> str:
    out, quoted = [], False
    index = 0
    while index < len(text):
        char = text[index]
        if char == '"':
            quoted = not quoted
        elif char == "\\" and index + 1 < len(text):
            index += 1
            out.append({"n": "\n", "t": "\t"}.get(text[index], text[index]))
        elif char in "#;" and not quoted:
            break
        else:
            out.append(char)
        index += 1
    return "".join(out).strip()


def normalize_remote(url: str) -> str:
    """One spelling per remote: `git@github.com:Org/App.git`, `https://github.com/Org/App`
    and `ssh://git@github.com/Org/App.git` all give `github.com/Org/App` (host lowered,
    user, scheme, a trailing `.git` and slashes dropped); a local path gives `file://<path>`."""
    text = url.strip()
    match = _SCHEME.fullmatch(text)
    if match and match.group(1).lower() != "file":
        host, path = match.group(2).lower(), match.group(3) or ""
    elif match:
        return "file://" + (_trim(os.path.normpath(match.group(3) or "/")) or "/")
    elif (scp := _SCP.fullmatch(text)) and not text.startswith(("/", ".")):
        host, path = scp.group(2).lower(), "/" + scp.group(3)
    else:
        return "file://" + (_trim(os.path.normpath(text)) or "/")
    return host + _trim(re.sub(r"/+", "/", path))


def _trim(path: str) -> str:
    """Drop trailing slashes and `.git` suffixes, as often as they repeat (`a/.git/`)."""
    while True:
        trimmed = path.rstrip("/")
        trimmed = trimmed[: -len(".git")] if trimmed.endswith(".git") else trimmed
        if trimmed == path:
            return path
        path = trimmed


def _read(path: Path) -> str | None:
    try:
        with path.open("rb") as handle:
            return handle.read(MAX_GIT_FILE).decode("utf-8", "replace")
    except OSError:
        return None


def _git_dirs(root: Path) -> tuple[Path, Path] | None:
    """(the git dir with HEAD, the common dir with config), or None if not a repository."""
    dot_git = root / ".git"
    if dot_git.is_dir():
        return dot_git, dot_git
    text = _read(dot_git) if dot_git.is_file() else None
    if text is None or not text.startswith("gitdir:"):
        return None
    git_dir = (root / text[len("gitdir:") :].strip()).resolve()
    common = _read(git_dir / "commondir")
    common_dir = (git_dir / common.strip()).resolve() if common else git_dir
    return git_dir, common_dir


def read_repository(root: Path) -> Repository | None:
    """The repository block of the repository at `root`, or None when it is not one."""
    dirs = _git_dirs(root)
    if dirs is None:
        return None
    git_dir, common_dir = dirs
    config = parse_git_config(_read(common_dir / "config") or "")
    remotes = [(sub, body) for (name, sub), body in config.items() if name == "remote" and sub]
    chosen = dict(remotes).get("origin") or (remotes[0][1] if remotes else None)
    url = chosen.get("url") if chosen else None
    remote = normalize_remote(url) if url else f"local:{root}"
    extensions = config.get(("extensions", None), {})
    object_format: Literal["sha1", "sha256"] = (
        "sha256" if extensions.get("objectformat", "sha1").lower() == "sha256" else "sha1"
    )
    head_text = (_read(git_dir / "HEAD") or "").strip()
    head: str | None = None
    if head_text.startswith("ref:"):
        head = head_text[len("ref:") :].strip() or None
    elif re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", head_text):
        head = head_text
    return Repository(remote, object_format, head)
