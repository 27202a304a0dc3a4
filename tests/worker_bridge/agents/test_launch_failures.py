"""An agent binary that cannot start (not on PATH, not executable) or exits before its
first answer fails the turn `launch_failed`, naming the harness, the cause and (for an
exit) its status and stderr tail; the worker lives on and the next turn tries again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trio

from ._drive import base_env, final, run_turn, spec, started_worker, work_dir

MODULES = ["claude_code", "codex", "acp"]
NAMES = {"claude_code": "claude-code", "codex": "codex", "acp": "acp"}


def options_for(module: str, command: str) -> dict[str, str]:
    """The executor options that make `module` run `command`."""
    if module == "acp":
        return {"argv": json.dumps([command, "--acp"])}
    return {"command": command}


def empty_path(tmp_path: Path) -> dict[str, str]:
    """A base environment whose PATH holds only an empty directory."""
    bin_dir = tmp_path / "empty-bin"
    bin_dir.mkdir(exist_ok=True)
    return {**base_env(tmp_path / "home"), "PATH": str(bin_dir)}


async def two_turns(module: str, tmp_path: Path, env: dict[str, str], command: str) -> list[str]:
    """The failure code and message of two turns on one worker (both must fail)."""
    found: list[str] = []
    with trio.fail_after(60):
        async with started_worker(
            spec(module, work_dir(tmp_path), env, options_for(module, command))
        ) as handle:
            for turn_id in ("turn-1", "turn-2"):
                end = final(await run_turn(handle, turn_id, "hello"))
                assert end.kind == "failed", end
                found.append(f"{(end.data or {}).get('code')}: {end.text}")
    return found


@pytest.mark.parametrize("module", MODULES)
async def test_binary_not_on_path_fails_launch_failed(tmp_path: Path, module: str) -> None:
    """A command name not on PATH fails each turn launch_failed, naming the harness and PATH."""
    found = await two_turns(module, tmp_path, empty_path(tmp_path), "no-such-agent")
    expected = f"launch_failed: {NAMES[module]}: 'no-such-agent' was not found on PATH"
    assert found == [expected, expected]


@pytest.mark.parametrize("module", MODULES)
async def test_binary_not_executable_fails_launch_failed(tmp_path: Path, module: str) -> None:
    """A command path that is not executable fails launch_failed, saying so."""
    binary = tmp_path / "agent"
    binary.write_text("#!/bin/sh\nexit 0\n")
    binary.chmod(0o644)
    (first, second) = await two_turns(module, tmp_path, empty_path(tmp_path), str(binary))
    assert first == second == f"launch_failed: {NAMES[module]}: {str(binary)!r} is not executable"


@pytest.mark.parametrize("module", MODULES)
async def test_binary_exiting_at_start_fails_launch_failed(tmp_path: Path, module: str) -> None:
    """A binary that exits 1 before answering fails launch_failed with its status and the
    tail of its stderr (the first lines cut, the last kept)."""
    binary = tmp_path / "agent"
    noise = "".join(f"echo 'noise line {i:04d}' >&2\n" for i in range(400))
    binary.write_text(f"#!/bin/sh\n{noise}echo 'fatal: no credentials found' >&2\nexit 1\n")
    binary.chmod(0o755)
    (first, second) = await two_turns(module, tmp_path, empty_path(tmp_path), str(binary))
    for found in (first, second):
        assert found.startswith(
            f"launch_failed: {NAMES[module]} exited before answering (exited with status 1);"
            " stderr: "
        ), found
        assert found.endswith("fatal: no credentials found"), found
        assert "noise line 0000" not in found  # bounded: only the tail
        assert len(found) < 2300


async def test_exec_program_not_on_path_fails_launch_failed(tmp_path: Path) -> None:
    """The exec worker's program not on PATH: launch_failed, naming the program."""
    options = {"argv": json.dumps(["no-such-program", "--flag"])}
    with trio.fail_after(60):
        async with started_worker(
            spec("exec", work_dir(tmp_path), empty_path(tmp_path), options)
        ) as handle:
            end = final(await run_turn(handle, "turn-1", "hello"))
    assert end.kind == "failed", end
    assert (end.data or {}).get("code") == "launch_failed", end
    assert "could not start no-such-program" in (end.text or ""), end
