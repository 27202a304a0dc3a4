"""The SDK invents a mutation's idempotency key when none is given; a retry passes it."""

from __future__ import annotations

from pathlib import Path

import pytest

from maia.client import MaiaError, open_client
from maia.core import Discovery

NodeProcess = tuple[Path, Discovery]


async def test_mutations_need_no_command_id(node_process: NodeProcess, tmp_path: Path) -> None:
    """project.add and session.create without command_id: each call is a new command."""
    home, _ = node_process
    async with open_client(home=home) as client:
        project = await client.project.add(root_path=str(tmp_path))
        project_id = project.project.project_id
        first = await client.session.create(project_id=project_id, title="one")
        second = await client.call("session.create", {"projectId": project_id, "title": "two"})
        assert first.session.session_id != second.session.session_id
        assert first.receipt_id != second.receipt_id


async def test_a_retry_with_the_same_command_id_is_the_same_command(
    node_process: NodeProcess, tmp_path: Path
) -> None:
    """Passing the first attempt's command_id again returns the first outcome, not a twin."""
    home, _ = node_process
    async with open_client(home=home) as client:
        project = await client.project.add(root_path=str(tmp_path))
        project_id = project.project.project_id
        command = "command_" + "ab" * 16
        first = await client.session.create(command_id=command, project_id=project_id)
        retry = await client.session.create(command_id=command, project_id=project_id)
        assert retry.session.session_id == first.session.session_id


async def test_a_look_up_key_is_never_invented(node_process: NodeProcess) -> None:
    """receipt.get with neither key is refused: the SDK does not make up a commandId."""
    home, _ = node_process
    async with open_client(home=home) as client:
        with pytest.raises(MaiaError) as caught:
            await client.receipt.get()
    assert caught.value.code == "validation_failed"
