"""No orphaned agents: stopping or killing an adapter worker takes its harness along."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
import trio

from . import _anthropic as claude_mock
from . import _openai as codex_mock
from ._drive import final, need_claude, need_codex, run_turn, spec, started_worker, work_dir
from ._sse_server import SseServer, serve
from ._support import claude_env, codex_env


def descendants(pid: int) -> list[psutil.Process]:
    return psutil.Process(pid).children(recursive=True)


def gone(processes: list[psutil.Process]) -> bool:
    for process in processes:
        try:
            if process.status() != psutil.STATUS_ZOMBIE:
                return False
        except psutil.NoSuchProcess:
            continue
    return True


@pytest.fixture(params=["claude_code", "codex"])
def harness(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, SseServer]]:
    if request.param == "claude_code":
        need_claude()
        route: object = claude_mock.AnthropicScript(
            *[claude_mock.text("hi", {"input": 1, "output": 1})] * 2
        )
    else:
        need_codex()
        route = codex_mock.OpenAIScript(*[codex_mock.text("hi", {"input": 1, "output": 1})] * 2)
    with serve(route) as server:  # type: ignore[arg-type]
        yield request.param, server


@pytest.mark.parametrize("how", ["stop", "kill"])
async def test_the_harness_dies_with_its_worker(
    tmp_path: Path, harness: tuple[str, SseServer], how: str
) -> None:
    """After a turn the worker has a harness below it; a stop, or SIGKILL of the worker,
    leaves none of the harness's processes running."""
    module, server = harness
    env = claude_env(tmp_path, server) if module == "claude_code" else codex_env(tmp_path, server)
    with trio.fail_after(90):
        async with started_worker(spec(module, work_dir(tmp_path), env)) as handle:
            assert final(await run_turn(handle, "turn-1", "hello")).kind == "completed"
            below = await trio.to_thread.run_sync(descendants, handle.pid)
            assert below, "the harness should run below the worker"
            if how == "kill":
                os.kill(handle.pid, signal.SIGKILL)
            await handle.stop("test")
        with trio.fail_after(10):
            while not await trio.to_thread.run_sync(gone, below):  # noqa: ASYNC110
                await trio.sleep(0.1)
