"""The version policy: deprecation tables, removeAfter, bumps per change, agent exposure."""

from __future__ import annotations

import datetime
from typing import Any

import attrs
import pytest

import maia.protocol._registry as registry_module
from maia.protocol import (
    AGENT_EXPOSURES,
    ERROR_CODES,
    NODE_CAPABILITIES,
    REGISTRY,
    REGISTRY_VERSION,
    Deprecation,
    RegistryError,
    apply_config_aliases,
    build_registry,
    compatibility_problems,
    lock_document,
)

TODAY = datetime.date(2026, 12, 1)


def _alias(**changes: Any) -> Deprecation:
    base: dict[str, Any] = {
        "kind": "operation",
        "name": "node.state",
        "replacement": "node.status",
        "deprecated_in": "0.9.0",
        "deprecated_on": "2026-12-01",
        "remove_after": "2027-03-01",
    }
    return Deprecation(**{**base, **changes})


def _lock(
    version: str, ops: dict[str, str], aliases: tuple[Deprecation, ...] = ()
) -> dict[str, Any]:
    return {
        "registryVersion": version,
        "operations": {name: {"digest": digest} for name, digest in ops.items()},
        "deprecations": [d.projection() for d in aliases],
    }


def _problems(old: dict[str, Any], new: dict[str, Any], today: datetime.date = TODAY) -> str:
    return "\n".join(compatibility_problems(old, new, today=today))


def test_an_addition_needs_a_minor_bump() -> None:
    """A new op with the same or a patch version is refused; a minor bump takes it."""
    old = _lock("0.9.0", {"a.x": "1"})
    assert "b.y was added without a minor" in _problems(
        old, _lock("0.9.1", {"a.x": "1", "b.y": "2"})
    )
    assert _problems(old, _lock("0.10.0", {"a.x": "1", "b.y": "2"})) == ""


def test_an_alteration_needs_a_minor_bump_during_alpha() -> None:
    """An op whose digest changed passes only with the minor raised."""
    old = _lock("0.9.0", {"a.x": "1"})
    assert "a.x was altered without" in _problems(old, _lock("0.9.0", {"a.x": "2"}))
    assert _problems(old, _lock("0.10.0", {"a.x": "2"})) == ""


def test_after_1_0_removals_and_changes_need_a_major() -> None:
    """From 1.0 on, a minor bump no longer covers a removal or an incompatible change."""
    old = _lock(
        "1.2.0",
        {"a.x": "1", "b.y": "1"},
        (
            _alias(
                name="b.y",
                replacement=None,
                deprecated_in="1.0.0",
                deprecated_on="2026-01-01",
                remove_after="2026-06-01",
            ),
        ),
    )
    new = _lock("1.3.0", {"a.x": "2"})
    problems = _problems(old, new)
    assert "a.x was altered incompatibly within major 1" in problems
    assert "b.y was removed within major 1" in problems
    assert "removed within" not in _problems(old, _lock("2.0.0", {"a.x": "2"}))


def test_a_removed_op_needs_a_deprecation_or_a_renamed_alias() -> None:
    """Removing an op outright is refused; renaming it behind an alias is taken."""
    old = _lock("0.9.0", {"node.state": "1", "node.status": "2"})
    assert "node.state was removed without a deprecation" in _problems(
        old, _lock("0.10.0", {"node.status": "2"})
    )
    renamed = _lock("0.10.0", {"node.status": "2"}, (_alias(deprecated_in="0.10.0"),))
    assert _problems(old, renamed) == ""


def test_an_alias_goes_only_after_its_remove_after_and_a_minor_release() -> None:
    """Removing an alias early, or in the minor that deprecated it, is refused."""
    alias = _alias(kind="flag", name="session list --all", replacement="session list --every")
    old = _lock("0.9.0", {}, (alias,))
    early = _problems(old, _lock("0.10.0", {}), today=datetime.date(2027, 2, 1))
    assert "removed before its removeAfter 2027-03-01" in early
    same_minor = _problems(old, _lock("0.9.1", {}), today=datetime.date(2027, 3, 2))
    assert "before 1 minor release(s) after 0.9.0" in same_minor
    assert _problems(old, _lock("0.10.0", {}), today=datetime.date(2027, 3, 2)) == ""


def test_an_alias_past_its_remove_after_must_go() -> None:
    """CI enforces the date: an alias still listed after removeAfter fails the check."""
    lock = _lock("0.9.0", {}, (_alias(kind="config-key", name="limits.old", replacement=None),))
    assert "past its removeAfter 2027-03-01: remove the alias" in _problems(
        lock, lock, today=datetime.date(2027, 3, 2)
    )
    assert _problems(lock, lock) == ""


@pytest.mark.parametrize(
    ("alias", "reason"),
    [
        (_alias(remove_after="2027-02-27"), "less than 90 days"),
        (_alias(remove_after="soon"), "must be YYYY-MM-DD"),
        (_alias(deprecated_in="9.0.0"), "is not a registry version yet"),
        (_alias(replacement="node.nope"), "replacement node.nope is not registered"),
        (_alias(replacement=None), "needs a replacement to serve it"),
    ],
)
def test_a_bad_deprecation_table_fails_the_build(alias: Deprecation, reason: str) -> None:
    """Each rule of the table itself is checked when the registry is built."""
    with pytest.raises(RegistryError, match=reason):
        build_registry(REGISTRY, deprecations=(alias,), registry_version=REGISTRY_VERSION)


def test_a_deprecated_op_needs_its_entry_and_an_alias_resolves() -> None:
    """stability deprecated without a removeAfter is refused; a renamed op's alias resolves."""
    status = REGISTRY.get("node.status")
    assert status is not None
    with pytest.raises(RegistryError, match=r"node\.status: a deprecated op needs its deprecation"):
        build_registry([*(op for op in REGISTRY if op is not status),
                        attrs.evolve(status, stability="deprecated")])  # fmt: skip
    built = build_registry(REGISTRY, deprecations=(_alias(),), registry_version="0.9.0")
    found, deprecation = built.resolve("node.state")
    assert found is status
    assert deprecation is not None
    diagnostic = deprecation.diagnostic()
    assert diagnostic["code"] == "deprecated"
    assert diagnostic["removeAfter"] == "2027-03-01"
    assert diagnostic["replacement"] == "node.status"
    assert built.resolve("node.status") == (status, None)
    assert lock_document(built, "0.9.0")["deprecations"] == [_alias().projection()]


def test_an_unclassified_op_fails_the_build_naming_it() -> None:
    """An op without an agent exposure class cannot be built; the error names the op."""
    status = REGISTRY.get("node.status")
    assert status is not None
    with pytest.raises(RegistryError, match=r"node\.status: not classified for agent exposure"):
        build_registry([attrs.evolve(status, agent_exposure=None)])


def test_every_op_is_classified_by_the_documented_rule() -> None:
    """Confirms, approvals and new roots are human-only; streams and hello unsupported."""
    by_class: dict[str, set[str]] = {name: set() for name in AGENT_EXPOSURES}
    for op in REGISTRY:
        assert op.agent_exposure in AGENT_EXPOSURES
        by_class[op.agent_exposure].add(op.operation_id)
        if op.confirmation == "required":
            assert op.agent_exposure == "human-only", op.operation_id
    assert {"approval.respond", "project.add"} <= by_class["human-only"]
    assert by_class["unsupported"] == {"node.hello", "session.attach", "observe.events"}
    assert {"session.create", "turn.send", "routine.create.preview"} <= by_class["eligible"]


def test_the_digest_covers_capabilities_and_the_error_table(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Changing a capability or an error's status changes the registry digest."""
    ops = list(REGISTRY)
    before = build_registry(ops).computed_digest
    monkeypatch.setattr(registry_module, "NODE_CAPABILITIES", (*NODE_CAPABILITIES, ("x", "y")))
    with_capability = build_registry(ops).computed_digest
    assert with_capability != before
    monkeypatch.undo()
    codes = dict(ERROR_CODES)
    codes["internal_error"] = attrs.evolve(codes["internal_error"], status=599)
    monkeypatch.setattr(registry_module, "ERROR_CODES", codes)
    assert build_registry(ops).computed_digest not in (before, with_capability)
    monkeypatch.undo()
    with_alias = build_registry(ops, deprecations=(_alias(),), registry_version="0.9.0")
    assert with_alias.computed_digest != before


def test_a_deprecated_config_key_is_moved_or_dropped_with_a_diagnostic() -> None:
    """A renamed key moves to its replacement, a removed one goes; the input is not touched."""
    renamed = _alias(kind="config-key", name="swarm.timezone", replacement="swarm.defaultTimezone")
    removed = _alias(kind="config-key", name="swarm.legacy", replacement=None)
    document = {"swarm": {"timezone": "Europe/Paris", "legacy": 1}}
    moved, found = apply_config_aliases(document, (renamed, removed))
    assert moved == {"swarm": {"defaultTimezone": "Europe/Paris"}}
    assert document == {"swarm": {"timezone": "Europe/Paris", "legacy": 1}}
    assert [d["name"] for d in found] == ["swarm.timezone", "swarm.legacy"]
    both = {"swarm": {"timezone": "UTC", "defaultTimezone": "Europe/Paris"}}
    assert apply_config_aliases(both, (renamed,)) == (both, [])  # the checker refuses the old


def test_a_user_file_with_a_renamed_key_is_read_through_the_alias(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """check_user_config reads the old key as its replacement and logs the diagnostic."""
    import maia.protocol
    from maia.config import check_user_config

    renamed = _alias(kind="config-key", name="swarm.timezone", replacement="swarm.defaultTimezone")
    monkeypatch.setattr(maia.protocol, "DEPRECATIONS", (renamed,))
    with caplog.at_level("WARNING", logger="maia.config"):
        config, problems = check_user_config({"swarm": {"timezone": "Europe/Paris"}})
    assert problems == []
    assert config.default_timezone == "Europe/Paris"
    assert '"name": "swarm.timezone"' in caplog.text
    monkeypatch.setattr(maia.protocol, "DEPRECATIONS", ())
    _, refused = check_user_config({"swarm": {"timezone": "Europe/Paris"}})
    assert refused  # without the alias the old key is unknown


def test_an_op_module_without_a_class_fails_at_import() -> None:
    """`operation()` itself refuses an op with no agent exposure: its module cannot load."""
    from maia.protocol import Empty
    from maia.protocol._common import operation

    with pytest.raises(RegistryError, match=r"thing\.new: not classified for agent exposure"):
        operation(operation_id="thing.new", summary="s", input_type=Empty, output_type=Empty)
