"""session.archive of an idle Session whose worker is still warm archives it and lets the
worker go (docs/sessions.md: archive a stopped or idle Session; idle means no activation
holds the Session, warm worker or not): it was refused `invalid_state` "stop it before
archiving". A real Node and a real echo worker: the worker process ends, the Session reads
idle and archived, and takes no more turns."""

from __future__ import annotations

import time
from pathlib import Path

from ._api import WAIT_S, api_of, command, real_node


def test_an_idle_session_with_a_warm_worker_archives(tmp_path: Path) -> None:
    with real_node(tmp_path) as node, api_of(node) as api:
        session_id = api.session(api.project(tmp_path / "p"))["sessionId"]
        api.call("turn.send", {"commandId": command(), "sessionId": session_id, "text": "hi",
                               "waitMilliseconds": 4000})  # fmt: skip
        warm = api.wait_session(session_id, states=["idle"], activities=["idle"])
        assert (warm["state"], warm["activity"]) == ("idle", "idle")
        assert api.call("node.status", {})["liveWorkers"] == 1
        done = api.call("session.archive", {"commandId": command(), "sessionId": session_id,
                                            "summary": "done"})  # fmt: skip
        assert (done["session"]["archived"], done["session"]["state"]) == (True, "idle")
        deadline = time.monotonic() + WAIT_S
        while api.call("node.status", {})["liveWorkers"] and time.monotonic() < deadline:
            time.sleep(0.1)
        assert api.call("node.status", {})["liveWorkers"] == 0
        error = api.error("turn.send", {"commandId": command(), "sessionId": session_id,
                                        "text": "more"})  # fmt: skip
        assert (error["code"], error["details"]["state"]) == ("invalid_state", "archived")
        again = api.error("session.archive", {"commandId": command(), "sessionId": session_id})
        assert again["details"]["state"] == "archived"
        assert again["message"].endswith("is already archived"), again
