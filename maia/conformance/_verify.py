"""`maia contract fixtures verify`: every registered op against its fixture set, each set
on a Node of its own, and the report (per-op failures, coverage, the unreachable list).
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

import trio
from jsonschema import Draft202012Validator

from maia.protocol import REGISTRY, OperationDescriptor

from ._coverage import static_problems
from ._format import FixtureFormatError, FixtureSet, load_fixture_sets
from ._node import PLANTED_ENV, PLANTED_WEBHOOK_ENV, Secrets, open_node
from ._previous import read_previous
from ._probes import CommonPlan, load_common, probe_common
from ._redaction import redaction_findings
from ._report import OpReport, VerifyReport
from ._runner import CaseFailed, SetRun
from ._values import PlaceholderError

SET_TIMEOUT_S: Final = 120.0
COMMON_FILE: Final = "_common.json"
PENDING: Final = "_pending"  # sets for ops not registered yet (another branch adds them)
PARALLEL_SETS: Final = 3  # Nodes at once: mostly waiting on workers and SQLite


def _merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def base_config(repo: Path) -> dict[str, Any]:
    """Every set's config.jsonc: an ACP agent (for approvals) and a loopback webhook receiver
    admitted; the planted secret's variable is passed to the agent worker."""
    agent = repo / "tests" / "worker_bridge" / "agents" / "acp_test_agent.py"
    return {
        "executors": {"acpt": {"kind": "acp", "argv": [sys.executable, str(agent)],
                               "env": ["ACP_TEST_STATE", PLANTED_ENV]}},
        "webhooks": {"allowAddresses": ["127.0.0.1/32"]},
    }  # fmt: skip


@contextmanager
def planted(secrets: Secrets) -> Iterator[None]:
    """The secrets in this process's environment (the Node's, and its workers'), and the
    root logger at INFO so the scan sees the Node's ordinary log lines."""
    root = logging.getLogger()
    level = root.level
    root.setLevel(logging.INFO)
    old = {name: os.environ.get(name) for name in (PLANTED_ENV, PLANTED_WEBHOOK_ENV)}
    os.environ[PLANTED_ENV] = secrets.api_key
    os.environ[PLANTED_WEBHOOK_ENV] = secrets.webhook
    try:
        yield
    finally:
        root.setLevel(level)
        for name, value in old.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


class Verifier:
    def __init__(self, fixtures: Path, repo: Path, plan: CommonPlan,
                 previous: dict[str, Any], secrets: Secrets) -> None:  # fmt: skip
        self.fixtures, self.repo, self.plan = fixtures, repo, plan
        self.previous, self.secrets = previous, secrets

    async def run_set(self, fixture: FixtureSet, op: OperationDescriptor) -> OpReport:
        started = time.monotonic()
        failures = static_problems(fixture, op, self.previous)
        reached: set[str] = set()
        unreachable = dict(fixture.unreachable)
        config = _merge(base_config(self.repo), fixture.config or {})
        issued: dict[str, str] = {}
        with tempfile.TemporaryDirectory(prefix="maia-conformance-") as folder:
            with trio.move_on_after(SET_TIMEOUT_S) as scope:
                async with open_node(Path(folder), config) as node, node.connect() as conn:
                    saved: dict[str, Any] = {
                        "work": str(node.work), "repo": str(self.repo), "python": sys.executable,
                        "home": str(node.home.root), "nodeId": conn.hello["nodeId"],
                        "port": node.port, "receiver": node.receiver_port,
                        "plantedApiKey": self.secrets.api_key,
                        "webhookSecretEnv": PLANTED_WEBHOOK_ENV}  # fmt: skip
                    run = SetRun(node, conn, fixture, op, saved)
                    issued = run.outcome.issued
                    failures += await self._cases(run, fixture, node)
                    common = await probe_common(self.plan, node, conn, op, run.outcome.reached)
                    reached |= run.outcome.reached | common[0]
                    unreachable.update(common[1])
                    failures += common[2]
                texts = [("an answer", f) for _, f in node.transcript.frames]
                texts += [("a log record", line) for line in node.transcript.logs]
                texts += [("a log file", text) for text in node.log_files()]
                texts += [("a webhook delivery", text) for text in node.transcript.received]
                failures += redaction_findings(texts, {
                    "the planted API key": self.secrets.api_key,
                    "the planted webhook secret": self.secrets.webhook,
                    "the bearer token": node.token})  # fmt: skip
                # A secret the op issues (an enrollment token) may be in its own answers only.
                others = [t for t in texts if t[0] != "an answer"]
                others += [(f"an answer to {m}", f) for m, f in node.transcript.frames
                           if m != op.operation_id]  # fmt: skip
                failures += redaction_findings(others, issued, generic=False)
            if scope.cancelled_caught:
                failures.append(f"the set did not finish within {SET_TIMEOUT_S:.0f} s")
        return OpReport(op.operation_id, tuple(failures), len(op.errors), frozenset(op.errors),
                        frozenset(reached), unreachable, len(fixture.cases),
                        time.monotonic() - started)  # fmt: skip

    async def _cases(self, run: SetRun, fixture: FixtureSet, node: Any) -> list[str]:
        failures: list[str] = []
        try:
            for index, step in enumerate(fixture.setup):
                await run.step(step, f"setup[{index}]")
        except (CaseFailed, PlaceholderError) as error:
            return [str(error)]
        for index, case in enumerate(fixture.cases):
            try:
                await run.case(case, f"cases[{index}] {case.name!r}")
            except (CaseFailed, PlaceholderError) as error:
                failures.append(str(error))
        if fixture.previous is not None:
            digest = self.previous.get("registryDigest")
            async with node.connect(digest) as old:
                if old.hello.get("registryMatch") is not False:
                    failures.append("a previous-registry hello answered registryMatch true")
                current, run.connection = run.connection, old
                run.registry_digest = digest
                schema = self.previous["inputSchemas"].get(fixture.operation)
                try:
                    await run.case(
                        fixture.previous,
                        f"previous ({self.previous['registryVersion']})",
                        sent_as=None if schema is None else Draft202012Validator(schema),
                    )
                except (CaseFailed, PlaceholderError) as error:
                    failures.append(str(error))
                finally:
                    run.connection, run.registry_digest = current, None
        return failures


async def _verify(fixtures: Path, repo: Path, only: frozenset[str] | None) -> VerifyReport:
    started = time.monotonic()
    try:
        plan = load_common(fixtures / COMMON_FILE)
        previous = read_previous(fixtures)
    except FixtureFormatError as error:
        return VerifyReport((), (str(error),))
    sets, problems = load_fixture_sets(fixtures)
    for name in sorted(set(sets) - set(REGISTRY.ids())):
        problems.append(f"{name}: a fixture set for an op the registry does not have")
    # Sets written ahead for ops another branch adds: used once the op is registered.
    pending, unreadable = load_fixture_sets(fixtures / PENDING)
    problems += unreadable
    waiting = []
    for name, fixture in pending.items():
        if name in sets:
            problems.append(f"{name}: both {PENDING}/{name} and {name} hold its set")
        elif name in REGISTRY.ids():
            sets[name] = fixture
        else:
            waiting.append(name)
    secrets = Secrets.planted()
    verifier = Verifier(fixtures, repo, plan, previous, secrets)
    reports: dict[str, OpReport] = {}
    limiter = trio.CapacityLimiter(PARALLEL_SETS)

    async def one(op: OperationDescriptor) -> None:
        fixture = sets.get(op.operation_id)
        if fixture is None:
            reports[op.operation_id] = OpReport(
                op.operation_id,
                (f"no fixtures (add {fixtures}/{op.operation_id}/cases.json)",),
                len(op.errors),
            )
            return
        async with limiter:
            reports[op.operation_id] = await verifier.run_set(fixture, op)

    with planted(secrets):
        async with trio.open_nursery() as nursery:
            for op in REGISTRY:
                if only is None or op.operation_id in only:
                    nursery.start_soon(one, op)
    ordered = tuple(reports[k] for k in sorted(reports))
    return VerifyReport(ordered, tuple(problems), tuple(sorted(waiting)),
                        time.monotonic() - started)  # fmt: skip


def verify_fixtures(
    fixtures: Path, *, repo: Path, only: Iterable[str] | None = None
) -> VerifyReport:
    """Run every op's fixture set (or those in `only`) and report; never raises for a
    failing fixture (the report says it)."""
    return trio.run(_verify, fixtures, repo, None if only is None else frozenset(only))
