"""A routine.run confirmed, then the Node killed -9 at once (its fire still launching, its
Session made or not): after the restart the fire ends once, with at most one Session and the
prompt run at most once (the echo worker's log). A real Node and real echo workers; what
the kill interrupts varies from run to run, and every interleaving must hold."""

from __future__ import annotations

import time
from pathlib import Path

from tests._node_process import NodeProcess

from ..review10o._api import Api, command

CONFIG = '{"executors": {"echo": {"kind": "echo", "env": ["MAIA_ECHO_LOG"]}}}\n'
WAIT_S = 60


def _started(log: Path) -> list[str]:
    """The turn ids the echo worker began, in order (one line a prompt)."""
    return [line.split()[0] for line in log.read_text().splitlines()] if log.exists() else []


def _fires_settled(api: Api, routine_id: str) -> list[dict[str, object]]:
    """routine.show's fires once none is launching (bounded)."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        fires: list[dict[str, object]] = api.call("routine.show", {"routineId": routine_id})[
            "fires"]  # fmt: skip
        if fires and all(f["state"] != "launching" for f in fires):
            return fires
        time.sleep(0.2)
    raise AssertionError(f"routine {routine_id}'s fire never settled")


def test_a_run_cut_by_kill_9_fires_once(tmp_path: Path) -> None:
    """One fire, settled after the restart; at most one Session of the Project; the
    prompt started at most once."""
    home, log = tmp_path / "home", tmp_path / "echo.log"
    home.mkdir(mode=0o700)
    (home / "config.jsonc").write_text(CONFIG)
    node = NodeProcess(home, {"MAIA_ECHO_LOG": str(log)})
    node.start()
    try:
        api = Api(node)
        project_id = api.project(tmp_path / "p")
        body = {"commandId": command(), "name": "r",
                "schedule": {"cron": "0 9 * * 1-5", "timezone": "UTC"},
                "template": {"projectId": project_id, "prompt": "hello",
                             "executor": "user:echo"}}  # fmt: skip
        preview = api.call("routine.create.preview", body)
        proved = {"inputDigest": preview["inputDigest"], "proof": preview["proof"]}
        routine = api.call("routine.create.confirm", {**body, **proved})["routine"]
        run = {"commandId": command(), "routineId": routine["routineId"],
               "expectedRevision": routine["revision"]}  # fmt: skip
        proof = api.call("routine.run.preview", run)
        api.call("routine.run.confirm", {**run, "inputDigest": proof["inputDigest"],
                                         "proof": proof["proof"]})  # fmt: skip
        node.kill()
        api.close()
        node.start()
        api = Api(node)
        fires = _fires_settled(api, routine["routineId"])
        assert len(fires) == 1, fires
        sessions = api.call("session.list", {"projectId": project_id})["sessions"]
        assert len(sessions) <= 1, sessions
        started = _started(log)
        assert len(started) == len(set(started)) <= 1, started
        api.close()
    finally:
        node.stop()
