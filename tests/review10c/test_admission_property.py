"""Arbitrary text as the user file, through the real admission entry point (the
config.admit.preview and config.admit.confirm handlers on real SQLite storage, a real file
read descriptor-first): a preview either answers or is refused `configuration_invalid`
naming a path (and every problem), and a refusal issues no preview and admits nothing; an
answered preview confirms, and the Node then runs on exactly the document the file holds.
Hypothesis derandomized, few examples: each opens its own storage."""

from __future__ import annotations

import json
import os
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from maia.config import UserConfig, loads_jsonc, parse_user_config
from maia.config._limits import KEYS as LIMIT_KEYS
from maia.protocol import REGISTRY, MaiaError, SystemClock, decode_input, to_json
from maia.service import HANDLERS, ServiceContext, effective_config, open_services
from storage import open_storage

KEYS = st.sampled_from([
    "schemaVersion", "swarm", "capacity", "defaults", "executors", "sessions", "webhooks",
    "observability", "maxLiveSessions", "maxQueuedMessages", "defaultTimezone", "kind", "argv",
    "env", "workerIdleMs", "allowAddresses", "modelRef", "cat", "logLevel", "x",
])  # fmt: skip
SCALARS = (
    st.none() | st.booleans() | st.integers(-10, 10**6) | st.sampled_from([
        "maia.user-config.v1", "exec", "echo", "UTC", "Europe/Paris", "127.0.0.1/32", "gpt-5",
        "", "a\n", 0.5, 10**16,
    ])
)  # fmt: skip
DOCUMENTS = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=12,
)
TOKENS = st.lists(
    st.sampled_from(['{', '}', '[', ']', ',', ':', '"swarm"', '"capacity"', '"maxLiveSessions"',
                     '3', '1e400', '// c\n', '/*', '*/', 'true', 'nul', '"\\ud800"', '\n', '"']),
    max_size=30,
).map("".join)  # fmt: skip
LIMITS = st.dictionaries(st.sampled_from(sorted(LIMIT_KEYS)), st.integers(-1, 200_000), max_size=3)
NEAR_VALID = st.fixed_dictionaries({}, optional={
    "swarm": st.fixed_dictionaries({}, optional={
        "capacity": LIMITS, "defaultTimezone": st.sampled_from(["UTC", "Europe/Paris", "Mars/X"]),
    }),
    "sessions": st.fixed_dictionaries({}, optional={"workerIdleMs": st.integers(-1, 10**8)}),
})  # fmt: skip
TEXTS = st.one_of(
    NEAR_VALID.map(lambda d: "// mine\n" + json.dumps(d, indent=1)),
    DOCUMENTS.map(lambda d: json.dumps(d, indent=1)),
    TOKENS,
)


def _params(op_id: str, body: dict[str, Any]) -> Any:
    descriptor = REGISTRY.get(op_id)
    assert descriptor is not None
    return decode_input(descriptor, body)


async def _call(ctx: ServiceContext, op_id: str, body: dict[str, Any]) -> dict[str, Any]:
    return to_json(await HANDLERS[op_id](ctx, _params(op_id, body)))  # type: ignore[no-any-return]


def _counts(conn: sqlite3.Connection) -> tuple[int, ...]:
    tables = ("previews", "config_snapshots", "events")
    return tuple(conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in tables)


async def _admit(home: Path) -> tuple[dict[str, Any] | None, MaiaError | None, UserConfig]:
    """(the confirm's result, or the preview's refusal; the user config the Node runs on)."""
    async with (
        open_storage(home / "maia.db", clock=SystemClock(), synchronous="NORMAL") as store,
        open_services(store, clock=SystemClock(), home=home, config=UserConfig()) as ctx,
    ):
        before = await ctx.read(_counts)
        try:
            preview = await _call(ctx, "config.admit.preview", {})
        except MaiaError as error:
            assert await ctx.read(_counts) == before, "a refused preview changed storage"
            return None, error, (await effective_config(ctx, None)).user
        keys = ("previewId", "proof", "inputDigest", "manifestDigest", "expectedRevision")
        confirm = {k: preview[k] for k in keys} | {"commandId": "admit-1"}
        done = await _call(ctx, "config.admit.confirm", confirm)
        return done, None, (await effective_config(ctx, None)).user


@settings(derandomize=True, max_examples=60, deadline=None)
@given(text=TEXTS)
def test_admission_of_any_text(text: str) -> None:
    """Refused with a named path and nothing changed, or admitted and in effect as written."""
    with tempfile.TemporaryDirectory() as base:
        home = Path(base) / "home"
        home.mkdir(mode=0o700)
        (home / "config.jsonc").write_text(text)
        os.chmod(home / "config.jsonc", 0o600)
        done, refusal, running = trio.run(_admit, home)
    if refusal is not None:
        assert refusal.code == "configuration_invalid", refusal
        assert isinstance(refusal.details["path"], str)
        assert refusal.details["path"]
        assert all(p["path"] for p in refusal.details["problems"])
        assert running == UserConfig()
        return
    assert done is not None
    assert done["revision"] == 1
    assert running == parse_user_config(loads_jsonc(text))
