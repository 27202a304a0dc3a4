"""The Node's home folder and the credential-bearing files in it.

The home is `$MAIA_HOME` or `~/.maia`, a folder only its owner may enter (0700). Files that
carry a credential or say where the credential lives (the token, the discovery file) are
written 0600 whatever the umask: they are opened with an explicit mode and `fchmod`ed before
a byte is written, then renamed into place so a reader never sees half a file. Every other
file of the home is opened through `_files` (0600, no symlinks, regular files only) and
checked at start.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import attrs

from maia.core import MaiaError

from ._files import cannot_write, open_private, secure_home_files

HOME_ENV = "MAIA_HOME"
TOKEN_BYTES = 32  # 256 bits of entropy, hex encoded


@attrs.frozen
class NodeHome:
    """The paths a Node keeps under its home folder."""

    root: Path

    @classmethod
    def resolve(cls, explicit: str | os.PathLike[str] | None = None) -> NodeHome:
        """The home named explicitly, else `$MAIA_HOME`, else `~/.maia` (not created)."""
        if explicit is not None:
            return cls(Path(explicit).expanduser().absolute())
        from_env = os.environ.get(HOME_ENV)
        if from_env:
            return cls(Path(from_env).expanduser().absolute())
        return cls(Path.home() / ".maia")

    @property
    def lock_path(self) -> Path:
        return self.root / "node.lock"

    @property
    def discovery_path(self) -> Path:
        return self.root / "node.json"

    @property
    def token_path(self) -> Path:
        return self.root / "node.token"

    @property
    def database_path(self) -> Path:
        return self.root / "maia.db"

    @property
    def log_path(self) -> Path:
        return self.root / "node.log"

    def ensure(self) -> None:
        """Create the home folder 0700 (and tighten an existing one we own), refuse planted
        symlinks among its files and tighten them to 0600 (`_files.secure_home_files`).

        Raises `MaiaError(configuration_invalid)` when the path is not a usable folder or
        one of its files is a symlink or not a regular file.
        """
        try:
            self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
            if not self.root.is_dir():
                raise MaiaError(
                    "configuration_invalid",
                    f"configuration is invalid: {self.root} is not a folder",
                    {"path": str(self.root)},
                )
            # mkdir's mode is filtered by the umask, and an older home may be wider: fix both.
            if self.root.stat().st_mode & 0o777 != 0o700:
                os.chmod(self.root, 0o700)
            secure_home_files(self.root)
        except OSError as error:
            raise MaiaError(
                "configuration_invalid",
                f"configuration is invalid: cannot use {self.root} as the Maia home: "
                f"{error.strerror}",
                {"path": str(self.root)},
            ) from error


def write_private_file(path: Path, data: bytes) -> None:
    """Atomically replace `path` with `data`, readable and writable by its owner only.

    Raises `OSError` when the folder is not writable.
    """
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = open_private(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        os.fsync(fd)
    except BaseException:
        os.close(fd)
        temporary.unlink(missing_ok=True)
        raise
    os.close(fd)
    os.replace(temporary, path)


def new_token() -> str:
    """A fresh bearer token (64 lowercase hex characters)."""
    return secrets.token_hex(TOKEN_BYTES)


def write_token(home: NodeHome) -> str:
    """Write a new token file for this Node run and return the token.

    Raises `MaiaError(unavailable)` naming the file and the cause (a full disk).
    """
    token = new_token()
    try:
        write_private_file(home.token_path, token.encode("ascii") + b"\n")
    except OSError as error:
        raise cannot_write(home.token_path, error) from error
    return token
