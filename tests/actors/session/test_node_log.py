"""A real Node process: a Session whose effect raises is restarted, and the effect's
traceback is in that Node's own `node.log` (not only on a logger in the test's process).

The Node is started as a user starts it, `python -m maia.node start --detach` (which writes
`node.log`), with one fault planted in its process by a `sitecustomize` on PYTHONPATH: the
worker handle's event stream of the prompt `explode` raises `RuntimeError`, a bug no layer
expects. Everything else is real: the entry point, the log file, a real echo worker
process, the SDK over a real loopback WebSocket."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from maia.client import open_client

from ..._sessions import new_session, wait_turn

CONFIG = '{"executors": {"echo": {"kind": "echo"}}}\n'
FAULT = "planted fault: the worker's event stream broke"
_PLANTED = f"""
from supervision._worker_turns import _HandleTurns

_prompt = _HandleTurns.prompt


def prompt(self, turn_id, text, **options):
    if text != "explode":
        return _prompt(self, turn_id, text, **options)

    async def broken():
        raise RuntimeError({FAULT!r})
        yield  # an async generator, as the real stream is

    return broken()


_HandleTurns.prompt = prompt
"""


def _node(home: Path, plant: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(plant)}
    return subprocess.run([sys.executable, "-m", "maia.node", *args, "--home", str(home)],
                          env=env, capture_output=True, text=True, timeout=90)  # fmt: skip


@pytest.fixture
def home(tmp_path: Path) -> Iterator[Path]:
    """A detached Node with the planted fault on a fresh home; stopped after the test."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (home / "config.jsonc").write_text(CONFIG)
    plant = tmp_path / "plant"
    plant.mkdir()
    (plant / "sitecustomize.py").write_text(_PLANTED)
    started = _node(home, plant, "start", "--detach")
    assert started.returncode == 0, started.stderr
    try:
        yield home
    finally:
        stopped = _node(home, plant, "stop")
        assert stopped.returncode == 0, stopped.stderr


async def test_a_raising_effect_restarts_its_session_with_the_traceback_in_node_log(
    home: Path, tmp_path: Path
) -> None:
    """The turn whose stream raised fails runtime_lost (never re-run), the restarted
    Session runs the next turn, another Session is unharmed, and node.log holds the crash
    line with the planted error's traceback."""
    async with open_client(home=home) as client:
        session_id = await new_session(client, tmp_path / "proj", "s1")
        other = await new_session(client, tmp_path / "other", "s2")
        sent = await client.call("turn.send", command_id="t1", session_id=session_id,
                                 text="explode")  # fmt: skip
        lost = await wait_turn(client, sent.turn.turn_id, "failed", "completed")
        assert (lost.state, lost.failure_reason) == ("failed", "runtime_lost")
        again = await client.call("turn.send", command_id="t2", session_id=session_id,
                                  text="after")  # fmt: skip
        after = await wait_turn(client, again.turn.turn_id, "completed", "failed")
        assert after.state == "completed"
        fine = await client.call("turn.send", command_id="t3", session_id=other,
                                 text="unharmed")  # fmt: skip
        assert (await wait_turn(client, fine.turn.turn_id, "completed", "failed")).state == (
            "completed"
        )
    # Logged (and flushed: a stream handler flushes each record) before the restart that
    # ran the next turn.
    text = (home / "node.log").read_text()
    crash = text.index(f"actor session/{session_id} crashed")
    traceback = text[crash:]
    assert "Traceback (most recent call last)" in traceback
    assert f"RuntimeError: {FAULT}" in traceback
    assert text.count(" crashed") == 1
