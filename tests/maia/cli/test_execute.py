"""execute(): references, local validation, errors to exit codes, output formats, and the
preview → summary → confirm flow of consequential ops, under trio and under asyncio.

No consequential op is registered yet, so the confirmation tests build a test registry with
a `thing.delete.preview`/`thing.delete.confirm` pair and a fake client that answers them;
everything else about execute is also covered against a real Node in test_e2e.py.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import anyio
import attrs

from maia.cli import Invocation, execute, parse_invocation
from maia.cli._execute import Out, progress
from maia.protocol import REGISTRY, MaiaError, build_registry, field
from maia.protocol._common import command_id_field, id_field, mutation, operation

SESSION = {
    "sessionId": "session_0123456789abcdef0123456789abcdef", "projectId": "project_1",
    "executor": "builtin:echo", "state": "idle", "revision": 1,
    "createdAt": "2026-01-01T00:00:00.000Z", "updatedAt": "2026-01-01T00:00:00.000Z",
    "cwd": "/p", "labels": [], "title": "demo",
}  # fmt: skip


class FakeClient:
    """Answers requests from a table of op → function(params); records every request."""

    def __init__(self, answers: dict[str, Callable[[dict[str, Any]], Any]]) -> None:
        self.answers = answers
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def request(self, method: str, params: dict[str, Any] | None = None) -> Any:
        self.calls.append((method, dict(params or {})))
        return self.answers[method](params or {})


def _resolved(params: dict[str, Any]) -> dict[str, Any]:
    return {"status": "resolved", "kind": params["kind"], "id": SESSION["sessionId"],
            "candidates": []}  # fmt: skip


async def _run(invocation: Invocation, client: Any, **kwargs: Any) -> tuple[int, str, str]:
    stdout, stderr = io.StringIO(), io.StringIO()
    code = await execute(invocation, client, stdout=stdout, stderr=stderr, **kwargs)
    return code, stdout.getvalue(), stderr.getvalue()


async def test_reference_is_resolved_before_the_call() -> None:
    """A title becomes the exact ID through reference.resolve; the op gets the ID."""
    client = FakeClient({"reference.resolve": _resolved,
                         "session.show": lambda p: {"session": SESSION}})  # fmt: skip
    code, out, _ = await _run(parse_invocation(["session", "show", "demo"]), client,
                              interactive=False)  # fmt: skip
    assert code == 0
    assert client.calls[0] == ("reference.resolve", {"reference": "demo", "kind": "session"})
    assert client.calls[1] == ("session.show", {"sessionId": SESSION["sessionId"]})
    assert "state" in out
    assert "idle" in out


async def test_ambiguous_reference_exits_2_with_candidates() -> None:
    """An ambiguous reference lists the candidates on stderr, exits 2, calls nothing else."""
    candidates = [
        {"id": "session_aaaa1", "label": "twin"},
        {"id": "session_aaaa2", "label": "twin"},
    ]
    answer = {"status": "ambiguous", "kind": "session", "id": None, "candidates": candidates}
    client = FakeClient({"reference.resolve": lambda p: answer})
    code, out, err = await _run(parse_invocation(["session", "show", "twin"]), client,
                                interactive=False)  # fmt: skip
    assert (code, out) == (2, "")
    assert "session_aaaa1" in err
    assert "session_aaaa2" in err
    assert [c[0] for c in client.calls] == ["reference.resolve"]


async def test_invalid_input_is_refused_locally() -> None:
    """Input the schema refuses exits 2 before anything is sent."""
    client = FakeClient({})
    invocation = parse_invocation(["session", "list", "--limit", "0"])
    code, _, err = await _run(invocation, client, interactive=False)
    assert code == 2
    assert "limit" in err
    assert client.calls == []


def _failing(code: str, details: dict[str, Any] | None = None) -> FakeClient:
    def fail(_: dict[str, Any]) -> Any:
        raise MaiaError(code, f"it failed: {code}", details)

    return FakeClient({"session.list": fail})


async def test_errors_map_to_exit_codes_and_json_envelope() -> None:
    """unavailable (transport) 6, unauthenticated 4, deadline 3, not found 1; --json prints
    the failure envelope on stdout and the message on stderr."""
    cases = [("unavailable", {"target": "node"}, 6), ("unauthenticated", None, 4),
             ("deadline_exceeded", {"method": "x", "ms": 1}, 3), ("internal_error", None, 1),
             ("unavailable", {"target": "storage"}, 1)]  # fmt: skip
    for code, details, expected in cases:
        exit_code, out, err = await _run(parse_invocation(["session", "list"]),
                                         _failing(code, details), interactive=False)  # fmt: skip
        assert exit_code == expected, code
        assert out == ""
        assert code in err
    exit_code, out, _ = await _run(parse_invocation(["session", "list", "--json"]),
                                   _failing("internal_error"), interactive=False)  # fmt: skip
    assert exit_code == 1
    assert out.startswith('{"error": {"code": "internal_error"')


def test_execute_runs_under_asyncio() -> None:
    """The same execute runs in an asyncio loop (the console's), anyio only."""
    client = FakeClient({"session.list": lambda p: {"sessions": [SESSION], "nextCursor": None}})
    result: tuple[int, str, str] = anyio.run(
        lambda: _run(parse_invocation(["session", "list"]), client, interactive=False),
        backend="asyncio",
    )
    code, out, _ = result
    assert code == 0
    assert str(SESSION["sessionId"]) in out


async def test_progress_note_goes_to_stderr() -> None:
    """A wait longer than the threshold says so on stderr, never on stdout, and not at all
    once data is flowing."""
    stdout, stderr = io.StringIO(), io.StringIO()
    async with progress(Out(stdout, stderr, "human"), "turn x", after_s=0):
        await anyio.sleep(0.05)
    assert stdout.getvalue() == ""
    assert "waiting for turn x" in stderr.getvalue()
    quiet = io.StringIO()
    streaming = Out(io.StringIO(), quiet, "human")
    streaming.data("partial reply")
    async with progress(streaming, "turn y", after_s=0):
        await anyio.sleep(0.05)
    assert quiet.getvalue() == ""


def test_colour_only_on_a_terminal_without_no_color(monkeypatch: Any) -> None:
    """Colour needs a terminal and no NO_COLOR; JSON is never coloured."""

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    assert Out(Tty(), io.StringIO(), "human").colour
    assert not Out(io.StringIO(), io.StringIO(), "human").colour
    assert not Out(Tty(), io.StringIO(), "json").colour
    monkeypatch.setenv("NO_COLOR", "1")
    assert not Out(Tty(), io.StringIO(), "human").colour


# A consequential op pair, as the spec shapes them (preview → digest and proof → confirm).
@attrs.frozen
class _DeleteInput:
    command_id: str = command_id_field()
    thing_id: str = id_field("The thing.")


@attrs.frozen
class _PreviewOutput:
    input_digest: str = field(doc="Digest.")
    proof: str = field(doc="Proof.")
    expected_revision: int = field(doc="Revision now.")
    summary: str = field(doc="What will happen.")


@attrs.frozen
class _ConfirmInput:
    command_id: str = command_id_field()
    thing_id: str = id_field("The thing.")
    input_digest: str | None = field(doc="Digest.", default=None)
    proof: str | None = field(doc="Proof.", default=None)
    expected_revision: int | None = field(doc="Revision.", default=None)


@attrs.frozen
class _Done:
    deleted: bool = field(doc="Done.")


_TEST_REGISTRY = build_registry([
    *REGISTRY,
    operation(operation_id="thing.delete.preview", summary="p", input_type=_DeleteInput,
              output_type=_PreviewOutput, agent_exposure="eligible"),
    mutation(operation_id="thing.delete.confirm", summary="c", input_type=_ConfirmInput,
             output_type=_Done, risk="destructive", confirmation="required",
             agent_exposure="human-only"),
])  # fmt: skip
_PREVIEW = {"inputDigest": "sha256:ab", "proof": "pr00f", "expectedRevision": 3,
            "summary": "deletes thing t1"}  # fmt: skip


def _thing_client() -> FakeClient:
    return FakeClient({"thing.delete.preview": lambda p: _PREVIEW,
                       "thing.delete.confirm": lambda p: {"deleted": True}})  # fmt: skip


def _delete(yes: bool = False) -> Invocation:
    return Invocation("thing.delete.confirm", params={"commandId": "c1", "thingId": "t1"},
                      yes=yes)  # fmt: skip


async def test_confirmation_refused_without_a_terminal() -> None:
    """No terminal and no --yes: the preview is shown, the confirm is never sent, exit 1."""
    client = _thing_client()
    code, out, err = await _run(_delete(), client, interactive=False, registry=_TEST_REGISTRY)
    assert code == 1
    assert "deletes thing t1" in err
    assert "--yes" in err
    assert out == ""
    assert [c[0] for c in client.calls] == ["thing.delete.preview"]


async def test_confirmation_declined_and_accepted_on_a_terminal() -> None:
    """Asked on a terminal: no changes nothing; yes sends the confirm with digest, proof
    and the previewed revision."""
    asked: list[str] = []

    async def answer_no(prompt: str) -> bool:
        asked.append(prompt)
        return False

    client = _thing_client()
    code, _, err = await _run(_delete(), client, interactive=True, confirm=answer_no,
                              registry=_TEST_REGISTRY)  # fmt: skip
    assert code == 1
    assert asked
    assert "nothing was changed" in err
    assert [c[0] for c in client.calls] == ["thing.delete.preview"]

    client = _thing_client()
    code, out, _ = await _run(_delete(), client, interactive=True, confirm=lambda p: True,
                              registry=_TEST_REGISTRY)  # fmt: skip
    assert code == 0
    assert "deleted" in out
    method, params = client.calls[-1]
    assert method == "thing.delete.confirm"
    assert params == {"commandId": "c1", "thingId": "t1", "inputDigest": "sha256:ab",
                      "proof": "pr00f", "expectedRevision": 3}  # fmt: skip


async def test_yes_confirms_without_asking() -> None:
    """--yes skips the question (a script), still previewing first."""
    client = _thing_client()
    code, _, _ = await _run(_delete(yes=True), client, interactive=False,
                            registry=_TEST_REGISTRY)  # fmt: skip
    assert code == 0
    assert [c[0] for c in client.calls] == ["thing.delete.preview", "thing.delete.confirm"]
