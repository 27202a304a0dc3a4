"""Revisions are positive (spec: identifier grammar), so `expectedRevision: 0` is refused
`validation_failed` naming the field wherever a mutation takes one — never read as "no
revision given", nor answered with another refusal. project.relocate.confirm took it (a
count) and answered `preview_mismatch`, "the root changed since the preview"; the Session
and turn mutations already refused it (a real Node)."""

from __future__ import annotations

from pathlib import Path

from ._api import api_of, command, real_node


def test_expected_revision_zero_is_a_named_refusal(tmp_path: Path) -> None:
    with real_node(tmp_path) as node, api_of(node) as api:
        project_id = api.project(tmp_path / "p")
        (tmp_path / "q").mkdir()
        moved = {"projectId": project_id, "rootPath": str(tmp_path / "q")}
        preview = api.call("project.relocate.preview", moved)
        confirm = {"commandId": command(), **moved, "previewId": preview["previewId"],
                   "proof": preview["proof"], "inputDigest": preview["inputDigest"]}  # fmt: skip
        session_id = api.session(api.project(tmp_path / "other"))["sessionId"]
        refusals = [
            ("project.relocate.confirm", {**confirm, "expectedRevision": 0}),
            ("session.stop", {"commandId": command(), "sessionId": session_id,
                              "expectedRevision": 0}),
            ("session.rename", {"commandId": command(), "sessionId": session_id, "title": "t",
                                "expectedRevision": 0}),
        ]  # fmt: skip
        for method, body in refusals:
            error = api.error(method, body)
            assert (error["code"], error["details"].get("path")) == (
                "validation_failed", "expectedRevision"), (method, error)  # fmt: skip
        done = api.call("project.relocate.confirm", {**confirm, "expectedRevision": 1})
        assert done["project"]["rootPath"] == str(tmp_path / "q")
