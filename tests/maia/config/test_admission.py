"""Admission through the handlers on real storage and real files: the preview's exact diff,
the confirm's single transaction (snapshot, revision, event, receipt), a stale preview and a
file edited between preview and confirm refused, an invalid file admitting nothing."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from maia.protocol import REGISTRY, MaiaError, decode_input, to_json
from maia.service import HANDLERS, ServiceContext, config_files_status, effective_config
from storage import get_receipt, read_owner_events


def _params(op_id: str, body: dict[str, Any]) -> Any:
    descriptor = REGISTRY.get(op_id)
    assert descriptor is not None
    return decode_input(descriptor, body)


async def call(ctx: ServiceContext, op_id: str, body: dict[str, Any]) -> dict[str, Any]:
    result = await HANDLERS[op_id](ctx, _params(op_id, body))
    return to_json(result)  # type: ignore[no-any-return]


async def admit(ctx: ServiceContext, scope: dict[str, Any], command: str) -> dict[str, Any]:
    preview = await call(ctx, "config.admit.preview", scope)
    confirm = {
        key: preview[key]
        for key in ("previewId", "proof", "inputDigest", "manifestDigest", "expectedRevision")
    }
    return await call(ctx, "config.admit.confirm", {**scope, **confirm, "commandId": command})


def write_user(home: Path, document: dict[str, Any]) -> None:
    path = home / "config.jsonc"
    path.write_text("// mine\n" + json.dumps(document, indent=2))
    os.chmod(path, 0o600)


async def add_project(ctx: ServiceContext, root: Path, key: str = "app") -> str:
    os.mkdir(root, 0o700)
    body = {"commandId": f"add-{key}", "rootPath": str(root), "projectKey": key}
    return str((await call(ctx, "project.add", body))["project"]["projectId"])


def write_project(root: Path, text: str) -> Path:
    folder = root / ".maia"
    folder.mkdir(mode=0o700, exist_ok=True)
    path = folder / "config.jsonc"
    path.write_text(text)
    os.chmod(path, 0o600)
    return path


async def test_user_preview_shows_the_exact_diff_and_confirm_commits_once(
    ctx: ServiceContext, home: Path
) -> None:
    """The first preview lists every key as added; the confirm writes the snapshot, revision 1,
    one config.admitted event and a receipt naming them; a second preview shows one change."""
    write_user(home, {"swarm": {"capacity": {"maxLiveSessions": 3}, "defaultTimezone": "UTC"}})
    preview = await call(ctx, "config.admit.preview", {})
    assert preview["changed"] is True
    assert preview["expectedRevision"] == 0
    assert [(c["path"], c["change"], c.get("after")) for c in preview["changes"]] == [
        ("swarm.capacity.maxLiveSessions", "added", 3),
        ("swarm.defaultTimezone", "added", "UTC"),
    ]
    done = await admit(ctx, {}, "admit-1")
    assert (done["scope"], done["revision"], done["changes"], done["delivery"]) == (
        "user",
        1,
        2,
        "new",
    )
    receipt = await ctx.read(lambda c: get_receipt(c, done["receiptId"]))
    assert receipt is not None
    assert receipt.operation_id == "config.admit.confirm"
    assert [t.result_revision for t in receipt.targets] == [1]
    events = await ctx.read(lambda c: read_owner_events(c, "config_user"))
    assert [e.event_type for e in events] == ["config.admitted"]
    assert list(receipt.event_ids) == [events[0].event_id]
    assert events[0].payload["changedPaths"] == [
        "swarm.capacity.maxLiveSessions",
        "swarm.defaultTimezone",
    ]
    write_user(home, {"swarm": {"capacity": {"maxLiveSessions": 5}, "defaultTimezone": "UTC"}})
    again = await call(ctx, "config.admit.preview", {})
    assert again["expectedRevision"] == 1
    assert again["changes"] == [
        {"path": "swarm.capacity.maxLiveSessions", "change": "changed", "before": 3, "after": 5}
    ]


async def test_editing_changes_nothing_until_admitted(ctx: ServiceContext, home: Path) -> None:
    """The effective limit follows the admitted snapshot, not the file; config.show says the
    file differs until it is admitted."""
    write_user(home, {"swarm": {"capacity": {"maxLiveSessions": 3}}})
    await admit(ctx, {}, "admit-1")
    write_user(home, {"swarm": {"capacity": {"maxLiveSessions": 7}}})
    shown = await call(ctx, "config.show", {})
    assert shown["user"]["file"] == "differs"
    limit = shown["effective"]["swarm.capacity"]["maxLiveSessions"]
    assert limit == {"value": 3, "source": "user"}
    await admit(ctx, {}, "admit-2")
    shown = await call(ctx, "config.show", {})
    assert shown["user"]["file"] == "admitted"
    assert shown["user"]["revision"] == 2
    assert shown["effective"]["swarm.capacity"]["maxLiveSessions"]["value"] == 7


KEYS = ("previewId", "proof", "inputDigest", "manifestDigest", "expectedRevision")


async def test_stale_preview_is_refused(ctx: ServiceContext, home: Path) -> None:
    """A preview judged at revision 1 cannot commit once another admission made revision 2,
    even when the file holds the previewed bytes again: revision_conflict, nothing changed."""
    write_user(home, {"swarm": {"capacity": {"maxLiveSessions": 3}}})
    await admit(ctx, {}, "a")
    write_user(home, {"swarm": {"capacity": {"maxLiveSessions": 4}}})
    stale = await call(ctx, "config.admit.preview", {})
    write_user(home, {"swarm": {"capacity": {"maxLiveSessions": 5}}})
    await admit(ctx, {}, "b")
    write_user(home, {"swarm": {"capacity": {"maxLiveSessions": 4}}})
    with pytest.raises(MaiaError) as caught:
        await call(ctx, "config.admit.confirm", {**{k: stale[k] for k in KEYS}, "commandId": "c"})
    assert caught.value.code == "revision_conflict"
    shown = await call(ctx, "config.show", {})
    assert shown["user"]["revision"] == 2
    assert shown["effective"]["swarm.capacity"]["maxLiveSessions"]["value"] == 5
    counts = await ctx.read(lambda c: [c.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                                       for t in ("config_snapshots", "receipts")])  # fmt: skip
    assert counts == [2, 2]  # the two admissions only: the stale confirm left nothing
    assert len(await ctx.read(lambda c: read_owner_events(c, "config_user"))) == 2


async def test_admitting_what_is_admitted_is_refused(ctx: ServiceContext, home: Path) -> None:
    """Two previews of one file: once the first is confirmed, the second is invalid_state
    (already admitted), and the preview says changed: false."""
    write_user(home, {"swarm": {"capacity": {"maxLiveSessions": 3}}})
    first = await call(ctx, "config.admit.preview", {})
    second = await call(ctx, "config.admit.preview", {})
    await call(ctx, "config.admit.confirm", {**{k: first[k] for k in KEYS}, "commandId": "a"})
    with pytest.raises(MaiaError) as caught:
        await call(ctx, "config.admit.confirm", {**{k: second[k] for k in KEYS}, "commandId": "b"})
    assert caught.value.code == "invalid_state"
    third = await call(ctx, "config.admit.preview", {})
    assert (third["changed"], third["changes"]) == (False, [])


async def test_file_edited_between_preview_and_confirm_is_refused(
    ctx: ServiceContext, home: Path
) -> None:
    """The confirm reads the file again: other bytes are refused (storage_conflict, reason
    file_changed), the proof stays unspent and nothing is admitted."""
    write_user(home, {"swarm": {"capacity": {"maxLiveSessions": 3}}})
    preview = await call(ctx, "config.admit.preview", {})
    write_user(home, {"swarm": {"capacity": {"maxLiveSessions": 99}}})
    keys = ("previewId", "proof", "inputDigest", "manifestDigest", "expectedRevision")
    with pytest.raises(MaiaError) as caught:
        await call(ctx, "config.admit.confirm", {**{k: preview[k] for k in keys}, "commandId": "a"})
    assert caught.value.code == "storage_conflict"
    assert caught.value.details["reason"] == "file_changed"
    shown = await call(ctx, "config.show", {})
    assert (shown["user"]["revision"], shown["user"]["file"]) == (0, "never-admitted")
    # The refusal recorded nothing and spent nothing: with the previewed bytes back, the
    # same preview still confirms.
    write_user(home, {"swarm": {"capacity": {"maxLiveSessions": 3}}})
    done = await call(ctx, "config.admit.confirm", {**{k: preview[k] for k in keys},
                                                    "commandId": "a"})  # fmt: skip
    assert done["revision"] == 1


async def test_a_manifest_digest_the_preview_never_gave_is_a_mismatch(
    ctx: ServiceContext, home: Path
) -> None:
    """A confirm whose manifestDigest is not the preview's (the file unchanged) is
    preview_mismatch, not `file changed since the preview` (storage_conflict), and spends
    nothing: the preview's own values still confirm."""
    write_user(home, {"swarm": {"capacity": {"maxLiveSessions": 3}}})
    preview = await call(ctx, "config.admit.preview", {})
    keys = ("previewId", "proof", "inputDigest", "manifestDigest", "expectedRevision")
    values = {k: preview[k] for k in keys}
    wrong = {**values, "manifestDigest": "sha256:" + "0" * 64, "commandId": "a"}
    with pytest.raises(MaiaError) as caught:
        await call(ctx, "config.admit.confirm", wrong)
    assert caught.value.code == "preview_mismatch"
    done = await call(ctx, "config.admit.confirm", {**values, "commandId": "a"})
    assert done["revision"] == 1


async def test_invalid_file_admits_nothing_and_names_every_problem(
    ctx: ServiceContext, home: Path
) -> None:
    """A file with two mistakes: the preview is configuration_invalid listing both with line
    and column, issues no proof, and nothing is admitted."""
    path = home / "config.jsonc"
    path.write_text(
        '{\n  "swarm": {\n    "defaultTimezone": "Not/AZone",\n'
        '    "capacity": {"currency": 5}\n  }\n}\n'
    )
    os.chmod(path, 0o600)
    with pytest.raises(MaiaError) as caught:
        await call(ctx, "config.admit.preview", {})
    assert caught.value.code == "configuration_invalid"
    found = {(p["path"], p["line"], p["column"]) for p in caught.value.details["problems"]}
    assert found == {("swarm.defaultTimezone", 3, 5), ("swarm.capacity.currency", 4, 18)}
    shown = await call(ctx, "config.show", {})
    assert shown["user"]["file"] == "invalid"
    assert shown["user"]["revision"] == 0


async def test_confirm_without_a_preview_is_refused(ctx: ServiceContext, home: Path) -> None:
    """The confirm alone is confirmation_required."""
    write_user(home, {})
    with pytest.raises(MaiaError) as caught:
        await call(ctx, "config.admit.confirm", {"commandId": "a"})
    assert caught.value.code == "confirmation_required"


async def test_retried_confirm_is_a_duplicate(ctx: ServiceContext, home: Path) -> None:
    """The same commandId and input replays the stored result without a second revision."""
    write_user(home, {"sessions": {"workerIdleMs": 5}})
    preview = await call(ctx, "config.admit.preview", {})
    keys = ("previewId", "proof", "inputDigest", "manifestDigest", "expectedRevision")
    body = {**{k: preview[k] for k in keys}, "commandId": "same"}
    first = await call(ctx, "config.admit.confirm", body)
    again = await call(ctx, "config.admit.confirm", body)
    assert (first["delivery"], again["delivery"]) == ("new", "duplicate")
    assert again["snapshotId"] == first["snapshotId"]
    assert (await call(ctx, "config.show", {}))["user"]["revision"] == 1


async def test_project_admission_resolves_self_and_bumps_the_project(
    ctx: ServiceContext, work: Path
) -> None:
    """A Project file's project:self/ references are resolved to the Project's ID in the
    preview, the snapshot and the effective view; the Project's revision moves to 2."""
    project_id = await add_project(ctx, work / "app")
    write_project(
        work / "app",
        """{
      "schemaVersion": "maia.project-config.v1",
      "projectKey": "app",
      "defaults": {"executorRef": "project:self/tests"},
      "allowedExecutors": ["project:self/tests", "builtin:echo"],
      "limits": {"maxLiveSessions": 2},
      "executors": {"tests": {"kind": "exec", "argv": ["/bin/cat"]}},
    }""",
    )
    scope = {"projectId": project_id}
    preview = await call(ctx, "config.admit.preview", scope)
    text = json.dumps(preview)
    assert "project:self" not in text
    assert f"project:{project_id}/tests" in text
    done = await admit(ctx, scope, "admit-p")
    assert (done["scope"], done["revision"]) == ("project", 2)
    project = await call(ctx, "project.show", scope)
    assert project["project"]["revision"] == 2
    effective = await effective_config(ctx, project_id)
    assert effective.project_snapshot_id == done["snapshotId"]
    assert effective.user_snapshot_id is None
    shown = await call(ctx, "config.show", scope)
    assert "project:self" not in json.dumps(shown)
    assert shown["project"]["file"] == "admitted"
    limit = {"value": 2, "source": "project"}  # the Project's `limits` narrowed it
    assert shown["effective"]["swarm.capacity"]["maxLiveSessions"] == limit
    assert shown["effective"]["limits"]["maxLiveSessions"] == limit  # the old name, kept
    assert shown["effective"]["defaults"]["executorRef"] == {
        "value": f"project:{project_id}/tests",
        "source": "project",
    }
    events = await ctx.read(lambda c: read_owner_events(c, project_id))
    assert [e.event_type for e in events] == ["project.added", "config.admitted"]
    assert "project:self" not in json.dumps([e.payload for e in events])


async def test_project_key_must_match_the_inventory(ctx: ServiceContext, work: Path) -> None:
    """A projectKey other than the inventory's is configuration_invalid at its line."""
    project_id = await add_project(ctx, work / "app")
    write_project(
        work / "app", '{"schemaVersion": "maia.project-config.v1",\n "projectKey": "other"}'
    )
    with pytest.raises(MaiaError) as caught:
        await call(ctx, "config.admit.preview", {"projectId": project_id})
    assert caught.value.code == "configuration_invalid"
    assert (caught.value.details["path"], caught.value.details["line"]) == ("projectKey", 2)


async def test_project_file_symlink_is_refused(ctx: ServiceContext, work: Path) -> None:
    """A .maia/config.jsonc that is a symlink is refused, not followed."""
    project_id = await add_project(ctx, work / "app")
    (work / "app" / ".maia").mkdir(mode=0o700)
    target = work / "elsewhere.jsonc"
    target.write_text('{"schemaVersion": "maia.project-config.v1", "projectKey": "app"}')
    (work / "app" / ".maia" / "config.jsonc").symlink_to(target)
    with pytest.raises(MaiaError) as caught:
        await call(ctx, "config.admit.preview", {"projectId": project_id})
    assert "symbolic link" in caught.value.message


async def test_group_writable_file_is_refused(ctx: ServiceContext, home: Path) -> None:
    """A user file others can write is refused, judged on its descriptor."""
    write_user(home, {})
    os.chmod(home / "config.jsonc", 0o620)
    with pytest.raises(MaiaError) as caught:
        await call(ctx, "config.admit.preview", {})
    assert "writable by group or others" in caught.value.message


async def test_files_status_reports_what_differs(
    ctx: ServiceContext, home: Path, work: Path
) -> None:
    """config_files_status lists a user file never admitted and a Project file that differs,
    and nothing once both are admitted; a Project without a file is not listed."""

    write_user(home, {})
    project_id = await add_project(ctx, work / "app")
    await add_project(ctx, work / "bare", "bare")
    write_project(work / "app", '{"schemaVersion": "maia.project-config.v1", "projectKey": "app"}')
    await admit(ctx, {"projectId": project_id}, "p1")
    write_project(
        work / "app",
        '{"schemaVersion": "maia.project-config.v1", "projectKey": "app",'
        ' "limits": {"maxLiveSessions": 1}}',
    )
    found = [(s.scope, s.file) for s in await config_files_status(ctx)]
    assert found == [("user", "never-admitted"), ("project", "differs")]
    await admit(ctx, {}, "u1")
    await admit(ctx, {"projectId": project_id}, "p2")
    assert await config_files_status(ctx) == []


async def test_duplicate_repository_and_ref_is_refused(ctx: ServiceContext, work: Path) -> None:
    """A second clone of the same remote on the same branch is refused; the mirror carries
    the repository block of the first."""
    for name in ("one", "two"):
        os.makedirs(work / name / ".git", 0o700)
        (work / name / ".git" / "config").write_text(
            '[remote "origin"]\n\turl = git@github.com:Org/App.git\n'
        )
        (work / name / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    first = await call(ctx, "project.add", {"commandId": "a", "rootPath": str(work / "one")})
    with pytest.raises(MaiaError) as caught:
        await call(ctx, "project.add", {"commandId": "b", "rootPath": str(work / "two")})
    assert caught.value.code == "invalid_state"
    assert "github.com/Org/App" in caught.value.message
    mirror = (ctx.home / "projects.jsonc").read_text()
    assert '"normalizedRemote": "github.com/Org/App"' in mirror
    assert first["project"]["workspaceKind"] == "repository"


async def test_a_large_diff_is_bounded(ctx: ServiceContext, home: Path) -> None:
    """250 new executors (500 keys) and a 200 KB argv: the preview lists the first 100
    changes with the total, shows the long value by size and digest, and still admits."""
    executors: dict[str, Any] = {f"e{i}": {"kind": "exec", "argv": ["/bin/cat"]}
                                 for i in range(250)}  # fmt: skip
    executors["big"] = {"kind": "exec", "argv": ["x" * 4000] * 50}
    write_user(home, {"executors": executors})
    preview = await call(ctx, "config.admit.preview", {})
    assert preview["totalChanges"] == 502
    assert len(preview["changes"]) == 100
    big = next(c for c in preview["changes"] if c["path"] == "executors.big.argv")
    assert big["after"].startswith("<200")
    assert "sha256:" in big["after"]
    done = await admit(ctx, {}, "big")
    assert done["changes"] == 502


async def test_snapshot_records_its_resources(ctx: ServiceContext, home: Path, work: Path) -> None:
    """The admitted manifest lists each executor the file defines (reference, scope, locator,
    content digest, schema version) and the builtin:/user: definitions it names."""
    from storage import admitted_snapshot

    write_user(home, {"executors": {"cat": {"kind": "exec", "argv": ["cat"]}}})
    await admit(ctx, {}, "u")  # the user:cat the Project names is admitted first
    project_id = await add_project(ctx, work / "app")
    write_project(
        work / "app",
        """{
      "schemaVersion": "maia.project-config.v1", "projectKey": "app",
      "allowedExecutors": ["project:self/t", "user:cat", "builtin:echo"],
      "executors": {"t": {"kind": "echo"}},
    }""",
    )
    await admit(ctx, {"projectId": project_id}, "p")
    snapshot = await ctx.read(lambda c: admitted_snapshot(c, project_id))
    assert snapshot is not None
    [resource] = snapshot.manifest["resources"]
    assert resource["ref"] == f"project:{project_id}/t"
    assert resource["locator"].endswith(".maia/config.jsonc#executors.t")
    assert resource["digest"].startswith("sha256:")
    assert resource["schemaVersion"] == "maia.project-config.v1"
    assert [r["ref"] for r in snapshot.manifest["references"]] == ["builtin:echo", "user:cat"]


async def test_admitted_user_config_is_what_a_restart_runs_on(
    ctx: ServiceContext, home: Path
) -> None:
    """None before any admission; after one, the admitted values even once the file is
    edited again (a restart must not apply an edit nobody admitted)."""
    from maia.service import admitted_user_config

    assert await admitted_user_config(ctx.store) is None
    write_user(home, {"swarm": {"capacity": {"maxLiveSessions": 3}}})
    await admit(ctx, {}, "a")
    write_user(home, {"swarm": {"capacity": {"maxLiveSessions": 9}}})
    admitted = await admitted_user_config(ctx.store)
    assert admitted is not None
    assert admitted.capacity.max_live_sessions == 3


async def test_a_project_whose_root_is_gone_admits_nothing(ctx: ServiceContext, work: Path) -> None:
    """A Project whose root went away (moved, unmounted) is refused at the preview, naming
    the root and relocate, and config.show says invalid; it previewed as an absent file
    (every admitted key `removed`), so admitting it dropped the Project's configuration."""
    root = work / "app"
    project_id = await add_project(ctx, root)
    write_project(root, '{"schemaVersion": "maia.project-config.v1", "projectKey": "app",'
                        ' "limits": {"maxLiveSessions": 2}}')  # fmt: skip
    admitted = await admit(ctx, {"projectId": project_id}, "admit-app")
    os.rename(root, work / "elsewhere")
    with pytest.raises(MaiaError) as caught:
        await call(ctx, "config.admit.preview", {"projectId": project_id})
    assert caught.value.code == "configuration_invalid"
    assert caught.value.details["source"] == str(root)
    assert "maia project relocate" in caught.value.details["detail"]
    shown = await call(ctx, "config.show", {"projectId": project_id})
    assert (shown["project"]["file"], shown["project"]["snapshotId"]) == (
        "invalid",
        admitted["snapshotId"],
    )
    assert shown["effective"]["swarm.capacity"]["maxLiveSessions"]["value"] == 2
