"""`maia node start`'s machine flags (issue 16), checked here and turned into the Node's
extra root-tree children (`maia.machines`).

    maia node start --machines-listen 127.0.0.1:7710          # a Control Node
    maia node start --execution --control ws://HOST:7710 \\
        --enrollment-file token.txt                            # an Execution Node

`--machines-listen` takes HOST:PORT (a bracketed IPv6 host, port 0 for a free one);
with `--machines-cert FILE --machines-key FILE` (PEM) it serves wss://, and enrollment
tokens pin that certificate's sha256 fingerprint.
`--execution` needs `--control` (ws:// or wss://) and, until the home holds a credential,
`--enrollment-token` or `--enrollment-file` (the file keeps the token out of `ps`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import click

MACHINE_OPTIONS: tuple[click.Option, ...] = (
    click.Option(["--machines-listen"], metavar="HOST:PORT", default=None,
                 help="Accept Execution Nodes on this address (a Control Node)."),
    click.Option(["--machines-cert"], type=click.Path(dir_okay=False, path_type=Path),
                 default=None, help="Serve wss:// with this PEM certificate (pinned by tokens)."),
    click.Option(["--machines-key"], type=click.Path(dir_okay=False, path_type=Path),
                 default=None, help="The private key of --machines-cert (PEM)."),
    click.Option(["--execution"], is_flag=True, help="Run as an Execution Node of --control."),
    click.Option(["--control"], metavar="URL", default=None,
                 help="The Control Node's machine address, ws://HOST:PORT."),
    click.Option(["--enrollment-token"], metavar="TOKEN", default=None,
                 help="The one-time token from `maia machine enroll` (first start only)."),
    click.Option(["--enrollment-file"], type=click.Path(dir_okay=False, path_type=Path),
                 default=None, help="A file holding that token (kept out of `ps`)."),
)  # fmt: skip


def machine_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """Add the machine flags to a click command (they arrive as keyword arguments)."""
    for option in reversed(MACHINE_OPTIONS):
        click.decorators._param_memo(command, option)  # the one way click stacks an Option
    return command


def _listen(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not sep or not host or not port.isdigit() or not 0 <= int(port) <= 65535:
        raise click.BadParameter("must be HOST:PORT, e.g. 127.0.0.1:7710",
                                 param_hint="--machines-listen")  # fmt: skip
    return host, int(port)


def _control(text: str | None) -> str:
    try:  # urlsplit raises ValueError on a bad IPv6 literal, .port on a bad port
        parts = urlsplit(text or "")
        bad = parts.scheme not in ("ws", "wss") or not parts.hostname or parts.path not in ("", "/")
        parts.port  # noqa: B018 - raises ValueError for a port out of range or not a number
    except ValueError:
        bad = True
    if bad:
        raise click.BadParameter("must be ws://HOST:PORT (or wss://)", param_hint="--control")
    return text.rstrip("/") if text else ""


def _token(token: str | None, path: Path | None) -> str | None:
    if token is not None and path is not None:
        raise click.BadParameter("give --enrollment-token or --enrollment-file, not both",
                                 param_hint="--enrollment-file")  # fmt: skip
    if path is None:
        return token
    try:
        return path.read_text().strip()
    except OSError as error:
        raise click.BadParameter(
            f"cannot read {path}: {error.strerror}", param_hint="--enrollment-file"
        ) from None


def _tls_files(values: dict[str, Any]) -> tuple[Path | None, Path | None]:
    """Both files or neither, and a pair that serves TLS (checked before the Node starts)."""
    from maia.machines import TlsFilesInvalid, listener_tls

    cert, key = values.get("machines_cert"), values.get("machines_key")
    if (cert is None) != (key is None):
        missing = "--machines-key" if key is None else "--machines-cert"
        raise click.BadParameter("give --machines-cert and --machines-key together",
                                 param_hint=missing)  # fmt: skip
    if cert is None or key is None:
        return None, None
    try:
        listener_tls(Path(cert), Path(key))
    except TlsFilesInvalid as error:
        raise click.BadParameter(str(error), param_hint="--machines-cert") from None
    return Path(cert).resolve(), Path(key).resolve()


def machine_children(values: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    """The root-tree children the flags ask for. Raises click.BadParameter naming a flag."""
    from maia.machines import control_child, execution_child

    children: list[tuple[str, Any]] = []
    if not values.get("machines_listen") and (values.get("machines_cert")
                                              or values.get("machines_key")):  # fmt: skip
        raise click.BadParameter("needs --machines-listen", param_hint="--machines-cert")
    cert, key = _tls_files(values)
    if values.get("machines_listen"):
        children.append(control_child(*_listen(values["machines_listen"]), cert, key))
    token = _token(values.get("enrollment_token"), values.get("enrollment_file"))
    if values.get("execution"):
        children.append(execution_child(_control(values.get("control")), token))
    elif values.get("control") or token is not None:
        raise click.BadParameter("needs --execution", param_hint="--control")
    return tuple(children)


def machine_argv(values: dict[str, Any]) -> list[str]:
    """The same flags again, for the detached child's command line."""
    argv: list[str] = []
    for flag, key in (("--machines-listen", "machines_listen"), ("--control", "control"),
                      ("--enrollment-token", "enrollment_token")):  # fmt: skip
        if values.get(key):
            argv += [flag, str(values[key])]
    for flag, key in (("--enrollment-file", "enrollment_file"), ("--machines-cert",
                      "machines_cert"), ("--machines-key", "machines_key")):  # fmt: skip
        if values.get(key):
            argv += [flag, str(Path(values[key]).resolve())]
    if values.get("execution"):
        argv.append("--execution")
    return argv
