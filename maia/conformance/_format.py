"""The fixture format (docs/conformance.md): one JSON file per operation, read strictly.

    tests/fixtures/ops/<operationId>/cases.json
    {"operation": "session.rename", "config": {...}?, "setup": [step, ...],
     "cases": [case, ...], "previous": {"params": {...}, "expect": {...}}?,
     "unreachable": {"<error code>" | "event:<type>": "why"}}

A step is an op call `{"op", "params", "save"?, "expect"?, "until"?}` or a move outside
the API: `{"sql": "...", "args": [...]}` (a second writer on the home's database),
`{"write": path, "text": ...}`, `{"mkdir": path}`, `{"remove": path}`, or
`{"repeat": n, "steps": [...]}`. A case is `{"name", "setup"?, "params", "expect", "save"?,
"stale"?, "replay"?, "fresh"?, "method"?, "secrets"?, "observe"?}`; `expect` is `{"error": code}` or
`{"result"?: {path: value}, "events"?: [type, ...], "receipt"?: {path: value}}`.
Unknown keys are refused, so a typo never reads as a passing fixture.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import orjson


class FixtureFormatError(ValueError):
    """A fixture file that does not follow the format (the message names file and key)."""


@attrs.frozen
class Step:
    kind: str  # op, sql, write, mkdir, remove, repeat
    op: str = ""
    params: Mapping[str, Any] = attrs.field(factory=dict)
    save: Mapping[str, str] = attrs.field(factory=dict)
    expect: str = "ok"  # "ok" or an error code
    until: Mapping[str, Any] = attrs.field(factory=dict)  # poll the op until these match
    sql: str = ""
    args: tuple[Any, ...] = ()
    path: str = ""
    text: str = ""
    times: int = 0  # repeat: run `steps` this many times, `$i` counting from 0
    steps: tuple[Step, ...] = ()


@attrs.frozen
class Expect:
    error: str | None = None
    result: Mapping[str, Any] = attrs.field(factory=dict)
    events: tuple[str, ...] = ()
    receipt: Mapping[str, Any] = attrs.field(factory=dict)

    @property
    def ok(self) -> bool:
        return self.error is None


@attrs.frozen
class Case:
    name: str
    params: Mapping[str, Any]
    expect: Expect
    setup: tuple[Step, ...] = ()
    save: Mapping[str, str] = attrs.field(factory=dict)
    stale: bool = False  # the stale-revision case of an op with revision fields
    replay: bool = True  # replay an ok mutation with the same commandId
    fresh: bool = False  # sent first on a new connection, before any node.hello
    method: str | None = None  # send this op instead (an error the op owns, met before it)
    secrets: Mapping[str, str] = attrs.field(factory=dict)  # name -> path of an issued secret
    observe: int = 0  # a subscribe request on /api/v1/observations: its first N answers


@attrs.frozen
class FixtureSet:
    operation: str
    path: Path
    cases: tuple[Case, ...]
    setup: tuple[Step, ...] = ()
    config: Mapping[str, Any] | None = None
    previous: Case | None = None
    unreachable: Mapping[str, str] = attrs.field(factory=dict)


def _keys(where: str, value: Any, allowed: set[str], required: set[str]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise FixtureFormatError(f"{where}: must be an object")
    unknown = sorted(set(value) - allowed)
    if unknown:
        raise FixtureFormatError(f"{where}: unknown key {unknown[0]!r}")
    missing = sorted(required - set(value))
    if missing:
        raise FixtureFormatError(f"{where}: missing key {missing[0]!r}")
    return value


def _step(where: str, value: Any) -> Step:
    if isinstance(value, dict) and "sql" in value:
        body = _keys(where, value, {"sql", "args"}, {"sql"})
        return Step("sql", sql=body["sql"], args=tuple(body.get("args", ())))
    if isinstance(value, dict) and "write" in value:
        body = _keys(where, value, {"write", "text"}, {"write", "text"})
        return Step("write", path=body["write"], text=body["text"])
    if isinstance(value, dict) and "mkdir" in value:
        return Step("mkdir", path=_keys(where, value, {"mkdir"}, {"mkdir"})["mkdir"])
    if isinstance(value, dict) and "remove" in value:
        return Step("remove", path=_keys(where, value, {"remove"}, {"remove"})["remove"])
    if isinstance(value, dict) and "repeat" in value:
        body = _keys(where, value, {"repeat", "steps"}, {"repeat", "steps"})
        if not isinstance(body["repeat"], int) or not 1 <= body["repeat"] <= 100:
            raise FixtureFormatError(f"{where}.repeat: must be an integer 1-100")
        return Step("repeat", times=body["repeat"], steps=_steps(f"{where}.steps", body["steps"]))
    body = _keys(where, value, {"op", "params", "save", "expect", "until"}, {"op"})
    return Step("op", op=body["op"], params=body.get("params", {}), save=body.get("save", {}),
                expect=body.get("expect", "ok"), until=body.get("until", {}))  # fmt: skip


def _steps(where: str, value: Any) -> tuple[Step, ...]:
    if not isinstance(value, list):
        raise FixtureFormatError(f"{where}: must be a list of steps")
    return tuple(_step(f"{where}[{i}]", step) for i, step in enumerate(value))


def _expect(where: str, value: Any) -> Expect:
    body = _keys(where, value, {"error", "result", "events", "receipt"}, set())
    if "error" in body and set(body) != {"error"}:
        raise FixtureFormatError(f"{where}: an error expectation takes only 'error'")
    events = body.get("events", [])
    if not isinstance(events, list) or not all(isinstance(e, str) for e in events):
        raise FixtureFormatError(f"{where}.events: must be a list of event types")
    return Expect(body.get("error"), body.get("result", {}), tuple(events),
                  body.get("receipt", {}))  # fmt: skip


def _observe(where: str, value: Any) -> int:
    """`observe`: true (the first answer) or how many answers to read, 1-16."""
    count = 1 if value is True else 0 if value is False else value
    if not isinstance(count, int) or not 0 <= count <= 16:
        raise FixtureFormatError(f"{where}.observe: must be true or a count of answers 1-16")
    return count


def _case(where: str, value: Any) -> Case:
    allowed = {"name", "setup", "params", "expect", "save", "stale", "replay", "fresh", "method",
               "secrets", "observe"}  # fmt: skip
    body = _keys(where, value, allowed, {"name", "params", "expect"})
    return Case(body["name"], body["params"], _expect(f"{where}.expect", body["expect"]),
                _steps(f"{where}.setup", body.get("setup", [])), body.get("save", {}),
                bool(body.get("stale", False)), bool(body.get("replay", True)),
                bool(body.get("fresh", False)), body.get("method"),
                body.get("secrets", {}), _observe(where, body.get("observe", 0)))  # fmt: skip


def load_fixture_set(path: Path) -> FixtureSet:
    """Read one `cases.json`. Raises FixtureFormatError naming the file and the key."""
    where = str(path)
    try:
        raw = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError) as error:
        raise FixtureFormatError(f"{where}: {error}") from None
    allowed = {"operation", "config", "setup", "cases", "previous", "unreachable", "$comment"}
    body = _keys(where, raw, allowed, {"operation", "cases"})
    if body["operation"] != path.parent.name:
        raise FixtureFormatError(f"{where}: operation {body['operation']!r} is not its folder")
    cases = body["cases"]
    if not isinstance(cases, list):
        raise FixtureFormatError(f"{where}.cases: must be a list")
    unreachable = body.get("unreachable", {})
    if not isinstance(unreachable, dict) or not all(
        isinstance(v, str) and len(v.strip()) >= 20 for v in unreachable.values()
    ):
        raise FixtureFormatError(f"{where}.unreachable: each entry needs a reason (20+ chars)")
    previous = None
    if "previous" in body:
        previous = _case(f"{where}.previous", {"name": "previous registry", **body["previous"]})
    return FixtureSet(
        body["operation"], path, tuple(_case(f"{where}.cases[{i}]", c) for i, c in
                                       enumerate(cases)),
        _steps(f"{where}.setup", body.get("setup", [])), body.get("config"), previous,
        unreachable,
    )  # fmt: skip


def load_fixture_sets(root: Path) -> tuple[dict[str, FixtureSet], list[str]]:
    """Every set under `root` by operation, and the problems of those that cannot be read."""
    sets: dict[str, FixtureSet] = {}
    problems = []
    for path in sorted(root.glob("*/cases.json")):
        try:
            loaded = load_fixture_set(path)
        except FixtureFormatError as error:
            problems.append(str(error))
            continue
        sets[loaded.operation] = loaded
    return sets, problems
