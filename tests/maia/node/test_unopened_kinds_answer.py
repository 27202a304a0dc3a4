"""The machine, webhook and routine kinds open on demand (maia/service/_kinds.py): a real Node
process on a fresh home, none of them open, answers their operations' refusals as a Node
that ran them from its start did (the same codes and messages as main at a308815, compared
request by request when this was written): the first call opens the kind and then its
handler answers, before anything of the kind existed."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from maia.client import open_client
from maia.core import MaiaError

from .conftest import NodeProcess

TIMEOUT_S = 60
_ROUTINE = "routine_" + "0" * 32
_HOOK = "hook_" + "0" * 32
_CRON = {"cron": "bad", "timezone": "UTC"}
_TEMPLATE = {"projectId": "project_" + "0" * 32, "prompt": "hi"}
_REFUSED: tuple[tuple[str, dict[str, Any], str, str], ...] = (
    ("routine.show", {"routineId": _ROUTINE}, "resource_not_found",
     f"routine {_ROUTINE} does not exist"),
    ("webhooks.show", {"webhookId": _HOOK}, "resource_not_found",
     f"webhook {_HOOK} does not exist"),
    ("machine.show", {"name": "nope"}, "resource_not_found", "machine nope does not exist"),
    ("routine.pause", {"commandId": "c1", "routineId": _ROUTINE}, "validation_failed",
     "expectedRevision: is required"),
    ("webhooks.change.preview", {"commandId": "c2", "change": {"kind": "remove",
     "webhookId": _HOOK}}, "resource_not_found", f"webhook {_HOOK} does not exist"),
    ("machine.revoke.preview", {"commandId": "c3", "name": "nope"}, "resource_not_found",
     "machine nope does not exist"),
    ("routine.create.preview", {"commandId": "c4", "name": "r", "schedule": _CRON,
     "template": _TEMPLATE}, "routine_schedule_invalid",
     "schedule.cron: must have exactly 5 fields: minute hour day month weekday"),
)  # fmt: skip


async def _answers(node: NodeProcess) -> list[tuple[str, str, str]]:
    out: list[tuple[str, str, str]] = []
    async with open_client(home=node.home.root, timeout_s=TIMEOUT_S) as client:
        for op_id, body, _, _ in _REFUSED:
            with pytest.raises(MaiaError) as refused:
                await client.request(op_id, body)
            out.append((op_id, refused.value.code, str(refused.value)))
    return out


def test_refusals_of_unopened_kinds_are_the_kinds_own(node_process: NodeProcess) -> None:
    """Each refusal (an unknown routine, webhook or machine, a missing field, a bad cron) is
    the code and message the kind's handler gives, on a Node where the kind was not open;
    the Node serves on after each."""
    answers = trio.run(_answers, node_process)
    for (op_id, code, message), (_, _, want_code, want_text) in zip(answers, _REFUSED, strict=True):
        assert code == want_code, op_id
        assert want_text in message, op_id
    assert node_process.process.poll() is None
