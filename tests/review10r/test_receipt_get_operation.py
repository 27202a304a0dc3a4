"""receipt.get's `operationId` (s10-ops, 4ba4177) is judged as receipt.list's is (95d6729):
an ID that names no operation recording receipts (a typo, a read) is bad input, refused
validation_failed naming operationId. It answered resource_not_found "receipt C does not
exist", so a typo read as "no such receipt" while the receipt existed. A real Node."""

from __future__ import annotations

from pathlib import Path

from ..review10o._api import api_of, command, real_node


def test_an_operation_id_that_records_no_receipts_is_refused_naming_it(tmp_path: Path) -> None:
    """turn.bogus and session.list (a read) beside an existing receipt's commandId are
    validation_failed with path operationId, as receipt.list answers them."""
    with real_node(tmp_path) as node, api_of(node) as api:
        session_id = api.session(api.project(tmp_path / "p"))["sessionId"]
        key = command()
        api.call("session.rename", {"commandId": key, "sessionId": session_id, "title": "t"})
        found = api.call("receipt.get", {"commandId": key, "operationId": "session.rename"})
        assert found["receipt"]["operationId"] == "session.rename"
        for wrong in ("session.renme", "session.list"):
            listed = api.error("receipt.list", {"operationId": wrong})
            assert (listed["code"], listed["details"]["path"]) == ("validation_failed",
                                                                   "operationId")  # fmt: skip
            error = api.error("receipt.get", {"commandId": key, "operationId": wrong})
            assert (error["code"], error["details"].get("path")) == (
                "validation_failed", "operationId"), error  # fmt: skip
