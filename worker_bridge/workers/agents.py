"""What the Node needs to know about the agent adapters: how to launch one, and a probe.

`worker_launch(kind, options, argv)` names the worker module of an executor kind and the
initialize options it takes (what `maia.config` parsed). `probe(kind, options, argv)` says
what the executor would run: the binary found, its version, the pinned version the tests
were verified against, and any problem (missing binary, flags the adapter needs that the
binary's `--help` lacks, an ACP agent that does not answer `initialize`) — for
`maia executor check NAME`. Blocking (it runs the binary, bounded by `timeout_s`).
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ._agent_env import bundled_claude, bundled_codex, harness_environment, resolve_command
from ._harness import HarnessMissing, HarnessProcess
from ._items import obj

MODULES = {
    "claude-code": "worker_bridge.workers.claude_code",
    "codex": "worker_bridge.workers.codex",
    "acp": "worker_bridge.workers.acp",
}
PINNED = {"claude-code": "2.1.332", "codex": "0.163.0"}
REQUIRED_FLAGS = {
    "claude-code": (
        "--input-format",
        "--permission-prompt-tool",
        "--session-id",
        "--resume",
        "--include-partial-messages",
    ),
    "codex": ("app-server",),
}
_VERSION = re.compile(r"(\d+\.\d+\.\d+)")


@dataclass(frozen=True)
class ProbeResult:
    """What a probe found. `ok` when the binary runs and has every flag the adapter uses."""

    kind: str
    found: bool
    path: str | None = None
    version: str | None = None
    pinned: str | None = None
    problem: str | None = None

    @property
    def ok(self) -> bool:
        return self.found and self.problem is None

    def as_dict(self) -> dict[str, object]:
        return {
            "kind": self.kind,
            "found": self.found,
            "path": self.path,
            "version": self.version,
            "pinned": self.pinned,
            "problem": self.problem,
            "ok": self.ok,
        }


def worker_launch(
    kind: str, options: Mapping[str, str], argv: Sequence[str] = ()
) -> tuple[str, dict[str, str]]:
    """The worker module and initialize options of an agent executor. Raises `KeyError`
    for a kind that is not an agent kind."""
    module = MODULES[kind]
    worker_options = dict(options)
    if kind == "acp":
        worker_options["argv"] = json.dumps(list(argv))
    return module, worker_options


def _run(argv: list[str], timeout_s: float) -> tuple[int | None, str]:
    try:
        done = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env=harness_environment(),
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return None, f"{argv[0]} did not answer within {timeout_s:g} s"
    except OSError as exc:
        return None, f"cannot run {argv[0]}: {exc.strerror or exc}"
    return done.returncode, (done.stdout + done.stderr)[:100_000]


def probe(
    kind: str, options: Mapping[str, str], argv: Sequence[str] = (), timeout_s: float = 10.0
) -> ProbeResult:
    """Run the executor's version probe (see the module docstring)."""
    if kind == "acp":
        return _probe_acp(list(argv), timeout_s)
    bundled = bundled_claude() if kind == "claude-code" else bundled_codex()
    name = "claude" if kind == "claude-code" else "codex"
    try:
        path = resolve_command(options.get("command", ""), bundled, name)
    except FileNotFoundError as exc:
        return ProbeResult(kind, False, pinned=PINNED[kind], problem=str(exc))
    status, output = _run([path, "--version"], timeout_s)
    if status != 0:
        return ProbeResult(kind, False, path, pinned=PINNED[kind], problem=output.strip()[:500])
    match = _VERSION.search(output)
    version = match.group(1) if match else None
    _, help_text = _run([path, "--help"], timeout_s)
    missing = [flag for flag in REQUIRED_FLAGS[kind] if flag not in help_text]
    problem = f"this version lacks {', '.join(missing)}" if missing else None
    return ProbeResult(kind, True, path, version, PINNED[kind], problem)


def _probe_acp(argv: list[str], timeout_s: float) -> ProbeResult:
    """Start the agent, send `initialize`, report its `agentInfo.version`, stop it."""
    if not argv:
        return ProbeResult("acp", False, problem="the executor has no argv")
    try:
        process = HarnessProcess(argv, env=harness_environment())
    except HarnessMissing as exc:
        return ProbeResult("acp", False, argv[0], problem=str(exc))
    try:
        from ._jsonrpc import RpcClosed, RpcError, RpcPeer

        rpc = RpcPeer(process, tag=True)
        try:
            hello = rpc.call(
                "initialize",
                {"protocolVersion": 1, "clientCapabilities": {}},
                timeout_s,
                lambda _message: None,
            )
        except (RpcError, RpcClosed) as exc:
            tail = process.stderr_tail(500)
            return ProbeResult("acp", True, argv[0], problem=f"{exc}{'; ' + tail if tail else ''}")
        info = obj(hello.get("agentInfo"))
        version = info.get("version") if isinstance(info.get("version"), str) else None
        return ProbeResult("acp", True, argv[0], version)
    finally:
        process.stop()
