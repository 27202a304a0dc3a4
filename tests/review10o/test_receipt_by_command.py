"""receipt.get by a commandId that two operations used: the idempotency key is (actor,
operation, commandId), so the commandId alone names two receipts. Without `operationId`
the Node refuses (`validation_failed` naming operationId and listing the operations; it
returned the newest silently); with it, that operation's receipt (a real Node)."""

from __future__ import annotations

from pathlib import Path

from ._api import api_of, real_node


def test_a_shared_command_id_needs_its_operation(tmp_path: Path) -> None:
    with real_node(tmp_path) as node, api_of(node) as api:
        root = tmp_path / "p"
        root.mkdir()
        added = api.call("project.add", {"commandId": "shared", "rootPath": str(root)})
        project_id = added["project"]["projectId"]
        api.call("session.create", {"commandId": "shared", "projectId": project_id})
        error = api.error("receipt.get", {"commandId": "shared"})
        assert error["code"] == "validation_failed", error
        assert error["details"]["path"] == "operationId", error
        assert error["details"]["operations"] == ["project.add", "session.create"], error
        for operation_id in ("project.add", "session.create"):
            got = api.call("receipt.get", {"commandId": "shared", "operationId": operation_id})
            assert got["receipt"]["operationId"] == operation_id
        error = api.error("receipt.get", {"commandId": "shared", "operationId": "turn.send"})
        assert error["code"] == "resource_not_found", error
        alone = api.call("project.add", {"commandId": "alone", "rootPath": str(tmp_path)})
        assert api.call("receipt.get", {"commandId": "alone"})["receipt"]["receiptId"] == (
            alone["receiptId"])  # fmt: skip
        error = api.error("receipt.get", {"receiptId": alone["receiptId"],
                                          "operationId": "project.add"})  # fmt: skip
        assert (error["code"], error["details"]["path"]) == ("validation_failed", "operationId")
