"""Arbitrary text as a Project file, through the real admission entry point (project.add,
config.admit.preview and config.admit.confirm on real SQLite storage, a real root and
file): a refusal is `configuration_invalid` naming a path, issues no preview and leaves the
Project's revision and configuration as they were; an answered preview confirms, and the
Project's work then runs on exactly that document, `project:self/` resolved. Hypothesis
derandomized, few examples: each opens its own storage."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from maia.config import ProjectConfig, UserConfig, loads_jsonc, parse_project_config
from maia.protocol import MaiaError, SystemClock
from maia.service import effective_config, open_services
from storage import open_storage

from .test_admission_property import DOCUMENTS, LIMITS, TOKENS, _call, _counts

REFS = st.sampled_from(["builtin:echo", "project:self/t", "project:self/u", "user:x", "echo"])
NEAR_VALID = st.fixed_dictionaries(
    {"schemaVersion": st.just("maia.project-config.v1"),
     "projectKey": st.sampled_from(["app", "app", "other"])},
    optional={
        "limits": LIMITS,
        "defaults": st.fixed_dictionaries({}, optional={"executorRef": REFS}),
        "allowedExecutors": st.lists(REFS, max_size=3),
        "executors": st.dictionaries(st.sampled_from(["t", "Bad"]),
                                     st.just({"kind": "echo"}), max_size=2),
    },
)  # fmt: skip
TEXTS = st.one_of(
    NEAR_VALID.map(lambda d: "// mine\n" + json.dumps(d, indent=1)),
    DOCUMENTS.map(json.dumps),
    TOKENS,
)


async def _admit(
    home: Path, root: Path, text: str
) -> tuple[str, MaiaError | None, ProjectConfig | None]:
    """(the Project's ID, the preview's refusal, the Project config its work runs on)."""
    async with (
        open_storage(home / "maia.db", clock=SystemClock(), synchronous="NORMAL") as store,
        open_services(store, clock=SystemClock(), home=home, config=UserConfig()) as ctx,
    ):
        added = await _call(ctx, "project.add", {"commandId": "add", "rootPath": str(root),
                                                 "projectKey": "app"})  # fmt: skip
        project_id = str(added["project"]["projectId"])
        path = root / ".maia" / "config.jsonc"
        path.parent.mkdir(mode=0o700)
        path.write_text(text)
        os.chmod(path, 0o600)
        before = await ctx.read(_counts)
        scope = {"projectId": project_id}
        try:
            preview = await _call(ctx, "config.admit.preview", scope)
        except MaiaError as error:
            assert await ctx.read(_counts) == before, "a refused preview changed storage"
            shown = await _call(ctx, "project.show", scope)
            assert shown["project"]["revision"] == 1
            return project_id, error, (await effective_config(ctx, project_id)).project
        keys = ("previewId", "proof", "inputDigest", "manifestDigest", "expectedRevision")
        confirm = {k: preview[k] for k in keys} | scope | {"commandId": "admit-1"}
        done = await _call(ctx, "config.admit.confirm", confirm)
        assert done["revision"] == 2
        return project_id, None, (await effective_config(ctx, project_id)).project


@settings(derandomize=True, max_examples=40, deadline=None)
@given(text=TEXTS)
def test_project_admission_of_any_text(text: str) -> None:
    """Refused with a named path and nothing changed, or admitted and in effect as written."""
    with tempfile.TemporaryDirectory() as base:
        home, root = Path(base) / "home", Path(base) / "app"
        home.mkdir(mode=0o700)
        root.mkdir(mode=0o700)
        project_id, refusal, running = trio.run(_admit, home, root, text)
    if refusal is not None:
        assert refusal.code == "configuration_invalid", refusal
        assert isinstance(refusal.details["path"], str)
        assert refusal.details["path"]
        assert running is None
        return
    assert running == parse_project_config(loads_jsonc(text), project_id=project_id)
