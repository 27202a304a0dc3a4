"""Running one fixture set against its Node: setup steps, cases, replays, the previous
registry's payload, each answer checked against the registry.

Checks made on every case: an answer validates against the op's result schema, or its
error against the op's declared error codes (an undeclared code fails); the expected
fields, events (each observed in the journal) and receipt (read back with `receipt.get`:
this op, this commandId, its events in the journal); an ok mutation replayed with the same
commandId answers `delivery: duplicate` with the same result and records nothing more; a
refused mutation emits nothing.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any, Final

import attrs
import trio

from maia.protocol import OperationDescriptor

from ._format import Case, Expect, FixtureSet, Step
from ._node import Connection, LiveNode
from ._schemas import error_problems, result_problems
from ._values import MISSING, at_path, mismatches, substitute

EVENT_WAIT_S: Final = 15.0


class CaseFailed(Exception):
    """A case's answer differs from what its fixture and the registry say."""


@attrs.define
class SetOutcome:
    """What one set proved: failures, the errors reached, the events seen."""

    operation: str
    failures: list[str] = attrs.field(factory=list)
    reached: set[str] = attrs.field(factory=set)
    events: set[str] = attrs.field(factory=set)
    cases: int = 0
    issued: dict[str, str] = attrs.field(factory=dict)  # secrets the op itself answered


def _write_or_mkdir(path: Path, kind: str, text: str) -> None:
    if kind == "remove":
        path.rmdir() if path.is_dir() else path.unlink()
    elif kind == "mkdir":
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    else:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        path.write_text(text, "utf-8")


class SetRun:
    def __init__(self, node: LiveNode, connection: Connection, fixture: FixtureSet,
                 descriptor: OperationDescriptor, saved: dict[str, Any]) -> None:  # fmt: skip
        self.node = node
        self.connection = connection
        self.fixture = fixture
        self.op = descriptor
        self.saved = saved
        self.outcome = SetOutcome(descriptor.operation_id)
        self._cursor: dict[str, Any] = {"kind": "start"}
        self.registry_digest: str | None = None  # the previous registry's, for its case

    async def new_events(self) -> list[dict[str, Any]]:
        """Journal events since the last call (every page)."""
        found: list[dict[str, Any]] = []
        while True:
            answer = await self.connection.request("events.read", {"position": self._cursor})
            if not answer.get("ok"):
                raise CaseFailed(f"events.read failed: {answer.get('error')}")
            page = answer["result"]
            found.extend(page["events"])
            self._cursor = {"kind": "cursor", "cursor": page["nextCursor"]}
            if not page["hasMore"]:
                return found

    async def step(self, step: Step, where: str) -> None:
        if step.kind == "sql":
            self._second_writer(step)
        elif step.kind == "repeat":
            for index in range(step.times):
                self.saved["i"] = index
                for number, inner in enumerate(step.steps):
                    await self.step(inner, f"{where}[{index}].steps[{number}]")
        elif step.kind in ("write", "mkdir", "remove"):
            path = Path(substitute(step.path, self.saved))
            if not path.is_absolute():
                raise CaseFailed(f"{where}: {step.path} is not absolute")
            text = substitute(step.text, self.saved)
            await trio.to_thread.run_sync(_write_or_mkdir, path, step.kind, text)
        else:
            answer = await self._call(step, where)
            if step.expect == "ok" and not answer.get("ok"):
                raise CaseFailed(f"{where}: {step.op} failed: {answer.get('error')}")
            if step.expect != "ok" and answer.get("error", {}).get("code") != step.expect:
                raise CaseFailed(f"{where}: {step.op} answered {answer}, not {step.expect}")
            self._save(step.save, answer.get("result"), where)

    async def _call(self, step: Step, where: str) -> dict[str, Any]:
        """The step's answer; with `until`, the first whose result matches (polled)."""
        params = substitute(step.params, self.saved)
        want = substitute(dict(step.until), self.saved)
        with trio.move_on_after(EVENT_WAIT_S):
            while True:
                answer = await self.connection.request(step.op, params)
                if not want or not mismatches(answer.get("result"), want):
                    return answer
                await trio.sleep(0.1)
        raise CaseFailed(f"{where}: {step.op} never answered {want}: last {answer}")

    def _second_writer(self, step: Step) -> None:
        # Another writer on the Node's database: what `storage_conflict` guards against.
        args = tuple(substitute(list(step.args), self.saved))
        conn = sqlite3.connect(self.node.home.database_path, timeout=10)
        try:
            with conn:
                changed = conn.execute(step.sql, args).rowcount
        finally:
            conn.close()
        if changed < 1:
            raise CaseFailed(f"the second writer changed no row: {step.sql} {args}")

    def _save(self, save: Any, result: Any, where: str) -> None:
        for name, path in save.items():
            value = at_path(result, path)
            if value is MISSING:
                raise CaseFailed(f"{where}: cannot save {name}: the result has no {path}")
            self.saved[name] = value

    async def case(self, case: Case, where: str, *, sent_as: Any = None) -> None:
        """Run one case; `sent_as` (a JSON Schema validator) must accept its params first:
        the previous registry's input schema, for the cross-version case."""
        for index, step in enumerate(case.setup):
            await self.step(step, f"{where}.setup[{index}]")
        await self.new_events()  # what the setup caused is not this case's
        params = substitute(dict(case.params), self.saved)
        if sent_as is not None:
            wrong = [e.message for e in sent_as.iter_errors(params)][:2]
            if wrong:
                raise CaseFailed(f"{where}: not an input of that registry: {'; '.join(wrong)}")
        method = case.method or self.op.operation_id
        if case.observe:
            answers = await self.node.observe(method, params, self.registry_digest, case.observe)
            for number, earlier in enumerate(answers[:-1]):  # the last one meets `expect`
                wrong = result_problems(self.op, earlier.get("result"))
                if wrong:
                    raise CaseFailed(f"{where}: answer {number + 1}: {'; '.join(wrong)}")
            answer = answers[-1]
        elif case.fresh:
            async with self.node.connect(greet=False) as fresh:
                answer = await fresh.request(method, params)
        else:
            answer = await self.connection.request(method, params)
        if case.expect.error is not None:
            await self._refused(case.expect, params, answer, where)
            return
        if not answer.get("ok"):
            raise CaseFailed(f"{where}: want a result, got {answer.get('error')}")
        result = answer["result"]
        want = substitute(dict(case.expect.result), self.saved)
        problems = result_problems(self.op, result) + mismatches(result, want)
        if problems:
            raise CaseFailed(f"{where}: result: {'; '.join(problems)}")
        events = await self._events(case.expect, where)
        if self.op.receipt:
            await self._receipt(case.expect, params, result, events, where)
        if self.op.idempotency == "required" and "commandId" in params and case.replay:
            await self._replay(params, result, where)
        self._save(case.save, result, where)
        for name, path in case.secrets.items():
            value = at_path(result, path)
            if not isinstance(value, str) or len(value) < 16:
                raise CaseFailed(f"{where}: secret {name}: no string of 16+ characters at {path}")
            self.outcome.issued[f"the issued {name}"] = value

    async def _refused(self, expect: Expect, params: Any, answer: Any, where: str) -> None:
        error = answer.get("error")
        if answer.get("ok") or not isinstance(error, dict):
            raise CaseFailed(f"{where}: want {expect.error}, got a result {answer.get('result')}")
        problems = error_problems(self.op, error)
        if error.get("code") != expect.error:
            problems.append(f"want {expect.error}, got {error.get('code')}: {error.get('message')}")
        if problems:
            raise CaseFailed(f"{where}: {'; '.join(problems)}")
        command = params.get("commandId") if isinstance(params, dict) else None
        if self.op.is_mutation and command is not None:
            caused = [e for e in await self.new_events() if e.get("commandId") == command]
            if caused:
                raise CaseFailed(f"{where}: the refused command emitted {caused[0]['eventType']}")
        self.outcome.reached.add(expect.error or "")

    async def _events(self, expect: Expect, where: str) -> list[dict[str, Any]]:
        seen: list[dict[str, Any]] = []
        want = set(expect.events)
        with trio.move_on_after(EVENT_WAIT_S):
            while True:
                seen += await self.new_events()
                if want <= {e["eventType"] for e in seen}:
                    break
                await trio.sleep(0.05)
        missing = want - {e["eventType"] for e in seen}
        if missing:
            raise CaseFailed(f"{where}: events never seen: {', '.join(sorted(missing))}")
        self.outcome.events |= want
        return seen

    async def _receipt(self, expect: Expect, params: Any, result: Any,
                       events: list[dict[str, Any]], where: str) -> None:  # fmt: skip
        receipt_id = result.get("receiptId")
        if not receipt_id:
            raise CaseFailed(f"{where}: a mutation's result carries no receiptId")
        answer = await self.connection.request("receipt.get", {"receiptId": receipt_id})
        if not answer.get("ok"):
            raise CaseFailed(f"{where}: receipt.get {receipt_id}: {answer.get('error')}")
        receipt = answer["result"]["receipt"]
        want = {"operationId": self.op.operation_id, "commandId": params.get("commandId"),
                **substitute(dict(expect.receipt), self.saved)}  # fmt: skip
        problems = mismatches(receipt, want)
        known = {e["eventId"] for e in events}
        problems += [f"eventIds: {e} is not in the journal" for e in receipt["eventIds"]
                     if e not in known]  # fmt: skip
        if problems:
            raise CaseFailed(f"{where}: receipt: {'; '.join(problems)}")

    async def _replay(self, params: Any, result: Any, where: str) -> None:
        again = await self.connection.request(self.op.operation_id, params)
        if not again.get("ok"):
            raise CaseFailed(f"{where}: the replay failed: {again.get('error')}")
        second = again["result"]
        if second.get("delivery") != "duplicate":
            raise CaseFailed(f"{where}: the replay answered delivery {second.get('delivery')}")
        first = {k: v for k, v in result.items() if k != "delivery"}
        if {k: v for k, v in second.items() if k != "delivery"} != first:
            raise CaseFailed(f"{where}: the replay answered another result: {second}")
        caused = [e for e in await self.new_events() if e.get("commandId") == params["commandId"]]
        if caused:
            raise CaseFailed(f"{where}: the replay emitted {caused[0]['eventType']} again")
