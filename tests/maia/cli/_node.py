"""A real Node process on a fresh home, and `Cli` to run `maia ...` against it, shared by the
end-to-end CLI modules (each starts its own Node once: a module-scoped fixture)."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from maia.cli import main
from tests._node_process import stop_node as stop_node  # SIGTERM, SIGKILL past a bound
from tests._node_process import wait_for_discovery

MAIA = [sys.executable, "-c", "import sys; from maia.cli import main; sys.exit(main())"]
TIMEOUT_S = 90


class Cli:
    """Runs `maia ...` with a home and a working directory: in this process (`main()`, fast)
    or, with `process`, as a real child process."""

    def __init__(self, home: Path, cwd: Path) -> None:
        self.home, self.cwd = home, cwd

    def __call__(self, *args: str) -> subprocess.CompletedProcess[str]:
        stdout, stderr = io.StringIO(), io.StringIO()
        saved_env, saved_cwd = dict(os.environ), os.getcwd()
        os.environ.update({"MAIA_HOME": str(self.home), "NO_COLOR": "1"})
        os.environ.pop("MAIA_NODE", None)
        os.chdir(self.cwd)
        try:
            with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
                code = main(list(args))
        finally:
            os.chdir(saved_cwd)
            os.environ.clear()
            os.environ.update(saved_env)
        return subprocess.CompletedProcess(list(args), code, stdout.getvalue(), stderr.getvalue())

    def environment(self, **env: str) -> dict[str, str]:
        environment = {**os.environ, "MAIA_HOME": str(self.home), "NO_COLOR": "1", **env}
        environment.pop("MAIA_NODE", None)
        return environment

    def process(
        self, *args: str | bytes, stdin: bytes | None = None, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """`maia ARGS` as a child process (`bytes` arguments go to it as they are), with
        `stdin` as its input and `env` added to its environment."""
        done = subprocess.run(
            [*MAIA, *args],
            capture_output=True,
            cwd=self.cwd,
            env=self.environment(**(env or {})),
            timeout=TIMEOUT_S,
            input=stdin,
            stdin=subprocess.DEVNULL if stdin is None else None,
            check=False,
        )
        return subprocess.CompletedProcess(
            done.args,
            done.returncode,
            done.stdout.decode("utf-8", "replace"),
            done.stderr.decode("utf-8", "replace"),
        )

    def popen(self, *args: str) -> subprocess.Popen[str]:
        """`maia ARGS` started as a child process, its stdout and stderr piped (text)."""
        return subprocess.Popen(
            [*MAIA, *args], cwd=self.cwd, env=self.environment(), stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
        )  # fmt: skip


@contextmanager
def reaped(process: subprocess.Popen[Any]) -> Iterator[subprocess.Popen[Any]]:
    """`process`, killed and waited for on the way out if it still runs: a failed assertion
    leaves no `maia` child behind."""
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def start_node(home: Path) -> subprocess.Popen[bytes]:
    """A foreground Node on `home`, returned once its discovery file names it."""
    process = subprocess.Popen(
        [sys.executable, "-m", "maia.node", "start", "--home", str(home)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    if wait_for_discovery(process, home) is None:
        stop_node(process)
        raise AssertionError("the Node did not start")
    return process


@contextmanager
def running_node(base: Path, config: str | None = None) -> Iterator[Cli]:
    """A foreground Node on `base/home` (with `config` as its config.jsonc) and a Cli that
    runs in the Project directory `base/project`; the Node is stopped on exit."""
    home, project = base / "home", base / "project"
    project.mkdir()
    if config is not None:
        home.mkdir(mode=0o700)
        (home / "config.jsonc").write_text(config, encoding="utf-8")
    process = start_node(home)
    try:
        yield Cli(home, project)
    finally:
        stop_node(process)
