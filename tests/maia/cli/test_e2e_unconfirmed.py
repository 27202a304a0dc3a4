"""A consequential command that cannot be confirmed (no terminal, no --yes): exit 1, nothing
changed, and with --json the one error document docs/cli.md promises (a real Node)."""

from __future__ import annotations

import json
from pathlib import Path

from ._node import running_node


def test_an_unconfirmable_command_answers_one_error_document(tmp_path: Path) -> None:
    with running_node(tmp_path) as cli:
        done = cli.process("machine", "enroll", "--name", "box", "--json")
        assert done.returncode == 1
        document = json.loads(done.stdout)  # exactly one document, nothing else
        assert document["ok"] is False
        error = document["error"]
        assert error["code"] == "confirmation_required"
        assert error["details"] == {"method": "machine.enroll.confirm"}
        assert "run it in a terminal, or pass --yes" in error["message"]
        assert error["retryable"] is False
        human = cli.process("machine", "enroll", "--name", "box")
        assert human.returncode == 1
        assert human.stdout == ""
        assert human.stderr.rstrip().endswith(
            "machine.enroll.confirm needs confirmation: run it in a terminal, or pass --yes"
            " (confirmation_required)"
        )
        listed = cli("machine", "list", "--json")
        assert json.loads(listed.stdout)["result"]["machines"] == []  # nothing was enrolled
