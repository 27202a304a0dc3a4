"""Agent benchmark: a Claude Code turn through Maia's worker versus the CLI driven directly.

Both sides run the same pinned Claude Code binary, one long-lived process each, against the
same loopback Anthropic mock (tests/worker_bridge/agents), in the same run: Maia's side is
the claude-code worker under the worker supervisor (items, usage, acks); the direct side
writes the same stream-json user line and reads until the CLI's `result`. The difference
is what Maia adds per turn. Needs the agents extra (`pip install -e '.[agents]'`).
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import trio

from bench._report import Report, log, parse_args, percentile
from supervision.workers import MemoryEpochSource, WorkerSpec, open_worker_supervisor
from tests.worker_bridge.agents import _anthropic as mock
from tests.worker_bridge.agents._sse_server import Recorded, Reply, serve
from worker_bridge.workers._agent_env import QUIET, bundled_claude, harness_environment
from worker_bridge.workers.claude_code import STREAM_FLAGS, user_line


def always_text(request: Recorded) -> Reply:
    """Every main-loop request gets the same short answer (the script never runs dry)."""
    script = mock.AnthropicScript(mock.text("Hello from the mock.", {"input": 20, "output": 5}))
    return script(request)


def environment(home: Path, url: str) -> dict[str, str]:
    home.mkdir(parents=True, exist_ok=True)
    return {
        "HOME": str(home),
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_API_KEY": "dummy",
        "IS_SANDBOX": "1",
        **QUIET,
    }


def direct_turns(claude: str, env: dict[str, str], cwd: str, rounds: int) -> list[float]:
    """The CLI driven directly: one user line out, read until its `result`."""
    full_env = {**harness_environment(), **env}
    argv = [claude, *STREAM_FLAGS, f"--session-id={uuid.uuid4()}"]
    process = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=full_env,
        cwd=cwd,
    )
    assert process.stdin is not None
    assert process.stdout is not None
    try:

        def send(message: dict[str, object]) -> None:
            assert process.stdin is not None
            process.stdin.write((json.dumps(message) + "\n").encode())
            process.stdin.flush()

        send({"type": "control_request", "request_id": "r1", "request": {"subtype": "initialize"}})
        while json.loads(process.stdout.readline()).get("type") != "control_response":
            pass
        samples = []
        for _ in range(rounds):
            start = time.perf_counter()
            send(user_line("hello"))
            while True:
                line = process.stdout.readline()
                if not line:
                    raise RuntimeError("claude exited during the benchmark")
                if json.loads(line).get("type") == "result":
                    break
            samples.append((time.perf_counter() - start) * 1000)
        return samples
    finally:
        process.kill()
        process.wait()


async def maia_turns(env: dict[str, str], cwd: str, rounds: int) -> list[float]:
    """The claude-code worker under the supervisor, as the Node runs it."""
    spec = WorkerSpec.python_module("worker_bridge.workers.claude_code", cwd=cwd, env=env)
    samples = []
    async with open_worker_supervisor(MemoryEpochSource()) as supervisor:
        handle = await supervisor.start_worker(spec)
        await handle.wait_initialized()
        for index in range(rounds):
            start = time.perf_counter()
            async with contextlib.aclosing(handle.prompt(f"turn-{index}", "hello")) as events:
                async for event in events:
                    if event.final:
                        if event.kind != "completed":
                            raise RuntimeError(f"turn {index} ended {event.kind}: {event.text}")
                        break
            samples.append((time.perf_counter() - start) * 1000)
        await handle.stop("bench")
    return samples


def main() -> None:
    args = parse_args(__doc__ or "")
    report = Report("agents")
    claude = bundled_claude()
    if claude is None:
        report.notes = "skipped: Claude Code missing (pip install -e '.[agents]')"
        report.emit(args.json)
        return
    rounds, warmup = (12, 2) if args.quick else (60, 5)
    with tempfile.TemporaryDirectory() as scratch, serve(always_text) as server:
        root = Path(scratch)
        work = root / "work"
        work.mkdir()
        env = environment(root / "home", server.url)
        maia: list[float] = []
        direct: list[float] = []
        for half in range(2):  # interleaved halves: drift hits both sides alike
            log(f"round {half + 1}/2: direct")
            direct += direct_turns(claude, env, str(work), rounds // 2 + warmup)[warmup:]
            log(f"round {half + 1}/2: through Maia")
            maia += trio.run(maia_turns, env, str(work), rounds // 2 + warmup)[warmup:]
    report.figures.update(
        maia_p50_ms=percentile(maia, 0.5),
        direct_p50_ms=percentile(direct, 0.5),
        maia_p99_ms=percentile(maia, 0.99),
        direct_p99_ms=percentile(direct, 0.99),
        maia_added_p50_ms=percentile(maia, 0.5) - percentile(direct, 0.5),
    )
    report.ratios["vs_direct_p50"] = percentile(direct, 0.5) / percentile(maia, 0.5)
    version = subprocess.run([claude, "--version"], capture_output=True, text=True).stdout.strip()
    report.notes = f"Claude Code {version}; {len(maia)} turns each side; loopback mock"
    report.emit(args.json)


if __name__ == "__main__":
    main()
