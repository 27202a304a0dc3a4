"""receipt.list's `operationId` filter takes only an operation that records receipts (spec:
receipt.list filters on the methods that record a receipt under their own method): an
unknown ID or a read is refused `validation_failed` naming the field (it answered an empty
page, so a typo looked like "no receipts"); one that records receipts filters (a real Node)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ._api import api_of, real_node


@pytest.mark.parametrize("operation_id", ["session.creat", "session.show", "no.such.op"])
def test_an_operation_without_receipts_is_refused(tmp_path: Path, operation_id: str) -> None:
    with real_node(tmp_path) as node, api_of(node) as api:
        api.project(tmp_path / "p")
        error = api.error("receipt.list", {"operationId": operation_id})
        assert error["code"] == "validation_failed", error
        assert error["details"]["path"] == "operationId", error
        assert error["message"].startswith("operationId: "), error
        listed = api.call("receipt.list", {"operationId": "project.add"})["receipts"]
        assert [r["operationId"] for r in listed] == ["project.add"]
