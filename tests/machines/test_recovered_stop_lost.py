"""A Control Node killed (`kill -9`) while a placed Session's turn runs, another queued; at
its restart the stop it asks at the Execution Node's hello (`stop_worker`,
`control_restarted`) is lost on its way by the fault proxy while the link stays up. Control
asks again on its own schedule (`REASK_S`), not only at a next hello that never comes: the
old worker is stopped and the queued turn runs once, never beside it (spec MN0 item 10).
Two real Node processes on 127.0.0.1, the proxy between them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import trio

from actors.machine._recovered import REASK_S

from ..review8c._db import alive
from ._nodes import wait_for
from .test_placement_e2e import _attempts
from .test_proxy_scenarios import BOUND_S, _blocking, _proxied

START = re.compile(r"start (\S+) (\d+)")


def _config(log: Path) -> str:
    script = (f'read line; echo "start $line $$" >> {log}; sleep 600; '
              f'echo "end $line" >> {log}; echo "$line"')  # fmt: skip
    return json.dumps({"executors": {"slow": {"kind": "exec", "argv": ["/bin/sh", "-c", script]}}})


def _starts(log: Path) -> list[str]:
    return [m[1] for m in START.finditer(log.read_text() if log.exists() else "")]


async def test_a_lost_stop_is_asked_again_while_the_link_stays_up(tmp_path: Path) -> None:
    log = tmp_path / "runs.log"
    with trio.fail_after(BOUND_S):
        async with _proxied(tmp_path, seed=11, config=_config(log)) as p:
            control = p.control
            created = await _blocking(control.call, "session", "create", "--project-id",
                                      p.project_id, "--machine", "box", "--executor",
                                      "user:slow")  # fmt: skip
            session_id = created["session"]["sessionId"]
            turns = [(await _blocking(control.call, "turn", "send", session_id, text,
                                      "--command-id", text))["turn"]["turnId"]
                     for text in ("one", "two")]  # fmt: skip
            await _blocking(wait_for, lambda: _starts(log) == ["one"], "turn one did not start",
                            control)  # fmt: skip
            [(first, _)] = _attempts(control, session_id)
            worker = int(START.findall(log.read_text())[0][1])
            port = await _blocking(control.machines_port)
            await _blocking(control.kill9)
            p.proxy.drop_containing("to_node", "stop_worker")
            control.flags = ("--machines-listen", f"127.0.0.1:{port}")
            await _blocking(control.start)
            with trio.fail_after(120):  # the hello's stop, lost
                while not any(e.fate.value == "lost" for e in p.proxy.events):  # noqa: ASYNC110 (the proxy records, no event)
                    await trio.sleep(0.1)
            p.proxy.drop_containing("to_node", None)  # the next ask gets through
            connections = p.proxy.connections
            await _blocking(wait_for, lambda: "two" in _starts(log), "turn two never started",
                            control, 120)  # fmt: skip
            assert not alive(worker), "turn two's worker started while turn one's still ran"
            assert p.proxy.connections == connections  # no reconnect (no new hello) asked it
            listed = await _blocking(control.call, "turn", "list", session_id)
            states = {t["turnId"]: t["state"] for t in listed["turns"]}
            assert states[turns[0]] in ("failed", "interrupted")  # ended once, never re-run
            assert states[turns[1]] == "running"
            assert _starts(log) == ["one", "two"]  # neither ran twice
            assert "end one" not in log.read_text()
            asked = control.log().count(f"attempt {first} (Session {session_id}): asked")
            assert asked >= 2, control.log()[-3000:]
            print(f"\nstop asked {asked} times, every {REASK_S} s while the link stayed up")
