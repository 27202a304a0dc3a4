"""`maia contract fixtures verify` on tmp copies of the fixtures: green as committed, red
when a fixture is removed, when an error is no longer reached, when a secret leaks."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from maia.conformance import (
    FixtureFormatError,
    VerifyReport,
    load_fixture_set,
    redaction_findings,
    verify_fixtures,
)

REPO = Path(__file__).resolve().parents[3]
FIXTURES = REPO / "tests" / "fixtures" / "ops"


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    target = tmp_path / "ops"
    shutil.copytree(FIXTURES, target)
    return target


def _edit(folder: Path, op: str, change: Any) -> None:
    path = folder / op / "cases.json"
    document = json.loads(path.read_text())
    change(document)
    path.write_text(json.dumps(document))


def _failures(report: VerifyReport, op: str) -> list[str]:
    return [f for r in report.ops if r.operation == op for f in r.failures]


def test_the_committed_fixtures_of_two_ops_are_green(copy: Path) -> None:
    """session.show and session.rename verify green, every declared error accounted for."""
    report = verify_fixtures(copy, repo=REPO, only=["session.show", "session.rename"])
    assert report.ok, list(report.lines())
    rename = next(r for r in report.ops if r.operation == "session.rename")
    assert {"storage_conflict", "revision_conflict", "idempotency_conflict"} <= rename.reached
    assert set(rename.reached) | set(rename.unreachable) >= set(
        json.loads((copy / "_common.json").read_text())["probes"]
    ) - {"role_denied", "command_not_implemented"}


def test_a_removed_fixture_set_is_red(copy: Path) -> None:
    """An op whose folder is gone fails with "no fixtures", naming the op."""
    shutil.rmtree(copy / "session.show")
    report = verify_fixtures(copy, repo=REPO, only=["session.show"])
    assert not report.ok
    assert any("no fixtures" in f for f in _failures(report, "session.show"))
    assert any(line.startswith("FAIL session.show: no fixtures") for line in report.lines())


def test_a_removed_error_case_is_red(copy: Path) -> None:
    """Dropping the only case of a declared error fails: the error has no case."""

    def drop(document: dict[str, Any]) -> None:
        document["cases"] = [c for c in document["cases"] if "error" not in c["expect"]]

    _edit(copy, "session.show", drop)
    report = verify_fixtures(copy, repo=REPO, only=["session.show"])
    assert "declared error resource_not_found has no case (and no unreachable reason)" in (
        _failures(report, "session.show")
    )


def test_an_error_no_longer_reached_is_red(copy: Path) -> None:
    """A case whose request no longer reaches its error (the Node answers a result) fails."""

    def reach_nothing(document: dict[str, Any]) -> None:
        for case in document["cases"]:
            if case["expect"].get("error") == "resource_not_found":
                case["params"]["sessionId"] = "$sid"

    _edit(copy, "session.show", reach_nothing)
    report = verify_fixtures(copy, repo=REPO, only=["session.show"])
    (failure,) = _failures(report, "session.show")
    assert "want resource_not_found, got a result" in failure


def test_a_secret_in_an_output_is_red(copy: Path) -> None:
    """A title carrying the planted API key comes back in answers: the redaction scan fails."""

    def plant(document: dict[str, Any]) -> None:
        document["cases"][0]["params"]["title"] = "key ${plantedApiKey}"
        document["cases"][0]["expect"]["result"].pop("session.title")

    _edit(copy, "session.rename", plant)
    report = verify_fixtures(copy, repo=REPO, only=["session.rename"])
    assert "an answer contains the planted API key" in _failures(report, "session.rename")


def test_the_redaction_scan_finds_tokens_headers_and_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each kind of leak is one finding naming where; clean text gives none."""
    monkeypatch.setenv("PATH", "/opt/conformance/bin:/usr/local/bin:/usr/bin")
    texts = [("an answer", "token=abc123secret"), ("a log record", "Authorization: Bearer x1"),
             ("a log file", "PATH=/opt/conformance/bin:/usr/local/bin:/usr/bin"),
             ("an answer", "nothing to see")]  # fmt: skip
    assert redaction_findings(texts, {"the bearer token": "abc123secret"}) == [
        "a log file contains the environment's PATH",
        "a log record contains a credential header",
        "an answer contains the bearer token",
    ]


def test_a_fixture_with_an_unknown_key_is_refused(tmp_path: Path) -> None:
    """A typo in a case ("expects") is a format error naming the file and the key."""
    folder = tmp_path / "session.show"
    folder.mkdir()
    (folder / "cases.json").write_text(json.dumps({
        "operation": "session.show",
        "cases": [{"name": "x", "params": {}, "expects": {}}]}))  # fmt: skip
    with pytest.raises(FixtureFormatError, match="unknown key 'expects'"):
        load_fixture_set(folder / "cases.json")


def test_the_command_exits_1_naming_the_op_without_fixtures(copy: Path) -> None:
    """`maia contract fixtures verify --op X` in a real subprocess: exit 1 and a FAIL line
    for an op whose set is gone; exit 0 and the summary for one that is there."""
    import subprocess
    import sys

    shutil.rmtree(copy / "receipt.list")
    command = [sys.executable, "-m", "maia", "contract", "fixtures", "verify", "--root", str(REPO),
               "--fixtures", str(copy)]  # fmt: skip
    failed = subprocess.run([*command, "--op", "receipt.list"], capture_output=True, text=True,
                            timeout=120, check=False)  # fmt: skip
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "FAIL receipt.list: no fixtures" in failed.stdout
    passed = subprocess.run([*command, "--op", "receipt.get", "--json"], capture_output=True,
                            text=True, timeout=120, check=False)  # fmt: skip
    assert passed.returncode == 0, passed.stdout + passed.stderr
    document = json.loads(passed.stdout)
    assert document["ok"] is True
    assert document["operations"]["receipt.get"]["reached"] == sorted(
        ["invalid_request", "overloaded", "resource_not_found", "unauthenticated",
         "validation_failed"]
    )  # fmt: skip


def test_a_previous_payload_the_previous_registry_would_not_send_is_red(copy: Path) -> None:
    """The cross-version payload must be an input of the previous registry (its schema in
    _previous.schemas.json): turn.show's params with a field it never had fail."""

    def newer(document: dict[str, Any]) -> None:
        document["previous"]["params"]["conformanceNewField"] = 1

    _edit(copy, "turn.show", newer)
    report = verify_fixtures(copy, repo=REPO, only=["turn.show"])
    (failure,) = _failures(report, "turn.show")
    version = json.loads((copy / "_previous.lock.json").read_text())["registryVersion"]
    assert failure.startswith(f"previous ({version}): not an input of that registry")


def test_a_pending_set_runs_once_its_op_is_registered(copy: Path) -> None:
    """A set under _pending/ runs when its op is registered (session.show moved there stays
    green) and is only listed while it is not (a made-up op)."""
    shutil.move(copy / "session.show", copy / "_pending" / "session.show")
    (copy / "_pending" / "nothing.here").mkdir()
    (copy / "_pending" / "nothing.here" / "cases.json").write_text(
        json.dumps({"operation": "nothing.here", "cases": []})
    )
    report = verify_fixtures(copy, repo=REPO, only=["session.show"])
    assert report.ok, list(report.lines())
    assert [r.operation for r in report.ops] == ["session.show"]
    assert "nothing.here" in report.waiting
