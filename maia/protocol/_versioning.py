"""The version policy: deprecation aliases, and what may change at which registry version.

A renamed or removed operation, CLI command, flag or config key keeps an alias (a
`Deprecation`) for at least `MIN_DEPRECATION_DAYS` days and at least one minor release
(two after 1.0), recorded with a `removeAfter` date. Whoever meets an alias gets a
machine-readable diagnostic (`Deprecation.diagnostic`): the API adds it to the response
envelope as `deprecations`, the CLI prints it on stderr.

`policy_problems` compares the registry's lock with the committed one (spec: CI compares
the registry with the last released snapshot): an added op needs a minor bump; a removed
or altered one a minor bump during alpha, and after 1.0 a major one; a removed op or alias
needs its alias or an expired deprecation; an alias past its `removeAfter` must go.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Iterator
from typing import Any, Final, Literal

import attrs

DeprecationKind = Literal["operation", "command", "flag", "config-key"]
DEPRECATION_KINDS: Final = ("operation", "command", "flag", "config-key")
MIN_DEPRECATION_DAYS: Final = 90


@attrs.frozen(kw_only=True)
class Deprecation:
    """One alias: the old name, what replaces it (None: removed), and when it may go.

    `name` is an op ID (`operation`), a command path (`command`: "session peek"), a
    command path and its flag (`flag`: "session list --all") or a dotted config key
    (`config-key`: "limits.maxLiveSessions"). `deprecated_in` is the registry version that
    deprecated it; the dates are ISO `YYYY-MM-DD` (UTC)."""

    kind: DeprecationKind
    name: str
    replacement: str | None
    deprecated_in: str
    deprecated_on: str
    remove_after: str

    @property
    def key(self) -> str:
        return f"{self.kind}:{self.name}"

    def projection(self) -> dict[str, Any]:
        """Its JSON form (the lock, the registry digest and the generated docs carry it)."""
        out: dict[str, Any] = {
            "kind": self.kind,
            "name": self.name,
            "deprecatedIn": self.deprecated_in,
            "deprecatedOn": self.deprecated_on,
            "removeAfter": self.remove_after,
        }
        if self.replacement is not None:
            out["replacement"] = self.replacement
        return out

    def diagnostic(self) -> dict[str, Any]:
        """The machine-readable diagnostic a caller of the alias gets."""
        instead = f"; use {self.replacement}" if self.replacement else ""
        return {
            "code": "deprecated",
            **self.projection(),
            "message": f"{self.kind} {self.name} is deprecated and goes after "
            f"{self.remove_after}{instead}",
        }


def _date(text: str) -> datetime.date | None:
    try:
        return datetime.date.fromisoformat(text)
    except ValueError:
        return None


def version_tuple(text: str) -> tuple[int, int, int] | None:
    """(major, minor, patch) of `X.Y.Z`, or None for anything else."""
    parts = text.split(".")
    if len(parts) != 3 or not all(part.isdigit() for part in parts):
        return None
    return int(parts[0]), int(parts[1]), int(parts[2])


def deprecation_problems(
    deprecations: Iterable[Deprecation], op_ids: frozenset[str], *, registry_version: str
) -> Iterator[str]:
    """What is wrong with the table itself (checked when the registry is built)."""
    seen: set[str] = set()
    current = version_tuple(registry_version)
    for entry in deprecations:
        where = f"deprecated {entry.kind} {entry.name}"
        if entry.key in seen:
            yield f"{where}: listed twice"
        seen.add(entry.key)
        start, end = _date(entry.deprecated_on), _date(entry.remove_after)
        if start is None or end is None:
            yield f"{where}: deprecatedOn and removeAfter must be YYYY-MM-DD dates"
        elif (end - start).days < MIN_DEPRECATION_DAYS:
            yield (
                f"{where}: removeAfter {entry.remove_after} is less than "
                f"{MIN_DEPRECATION_DAYS} days after {entry.deprecated_on}"
            )
        since = version_tuple(entry.deprecated_in)
        if since is None or current is None or since > current:
            yield f"{where}: deprecatedIn {entry.deprecated_in} is not a registry version yet"
        if entry.kind != "operation":
            continue
        if entry.replacement is not None and entry.replacement not in op_ids:
            yield f"{where}: its replacement {entry.replacement} is not registered"
        if entry.name not in op_ids and entry.replacement is None:
            yield f"{where}: an unregistered op's alias needs a replacement to serve it"


def _releases_between(since: tuple[int, int, int], now: tuple[int, int, int]) -> int:
    """How many minor releases lie after `since` up to `now` (a major counts as one more)."""
    if now[0] > since[0]:
        return now[1] + 1
    return now[1] - since[1]


def policy_problems(old: dict[str, Any], new: dict[str, Any], *, today: datetime.date) -> list[str]:
    """Everything the version policy refuses in the lock `new` against the committed `old`."""
    new_version = version_tuple(str(new.get("registryVersion", "")))
    old_version = version_tuple(str(old.get("registryVersion", ""))) or (0, 0, 0)
    if new_version is None:
        return [f"REGISTRY_VERSION {new.get('registryVersion')!r} is not X.Y.Z"]
    problems: list[str] = []
    minor_bump = new_version[:2] > old_version[:2]
    major_bump = new_version[0] > old_version[0]
    stable = old_version[0] >= 1
    old_ops: dict[str, Any] = old.get("operations", {})
    new_ops: dict[str, Any] = new.get("operations", {})
    new_aliases = {_alias_key(d): d for d in new.get("deprecations", ())}
    old_aliases = {_alias_key(d): d for d in old.get("deprecations", ())}
    for name in sorted(set(new_ops) - set(old_ops)):
        if not minor_bump:
            problems.append(f"{name} was added without a minor registry version bump")
    for name, entry in sorted(old_ops.items()):
        current = new_ops.get(name)
        if current is None:
            problems.extend(_removal(name, old_aliases, new_aliases, new_version, today))
            if stable and not major_bump:
                problems.append(f"{name} was removed within major {old_version[0]} (after 1.0)")
            elif not minor_bump:
                problems.append(f"{name} was removed without a registry version bump")
        elif current.get("digest") != entry.get("digest"):
            if stable and not major_bump:
                problems.append(f"{name} was altered incompatibly within major {old_version[0]}")
            elif not minor_bump:
                problems.append(f"{name} was altered without a registry version bump")
    for key, alias in sorted(old_aliases.items()):
        removed_op = alias.get("kind") == "operation" and alias.get("name") in old_ops
        if key not in new_aliases and not removed_op:  # a removed op's own: see _removal
            problems.extend(_expired(alias, new_version, today, "alias"))
    for _key, alias in sorted(new_aliases.items()):
        end = _date(str(alias.get("removeAfter", "")))
        if end is not None and today > end:
            problems.append(
                f"deprecated {alias['kind']} {alias['name']} is past its removeAfter "
                f"{alias['removeAfter']}: remove the alias"
            )
    return problems


def _alias_key(entry: dict[str, Any]) -> str:
    return f"{entry.get('kind')}:{entry.get('name')}"


def _removal(
    name: str,
    old_aliases: dict[str, Any],
    new_aliases: dict[str, Any],
    version: tuple[int, int, int],
    today: datetime.date,
) -> Iterator[str]:
    """A removed op: kept as a renamed alias, or its deprecation has run its course."""
    key = f"operation:{name}"
    if key in new_aliases:
        if new_aliases[key].get("replacement") is None:
            yield f"{name} was removed but its alias names no replacement to serve it"
        return
    if key not in old_aliases:
        yield (
            f"{name} was removed without a deprecation: keep it (stability deprecated) or "
            "alias it to its replacement, with a removeAfter date, for at least "
            f"{MIN_DEPRECATION_DAYS} days and one minor release"
        )
        return
    yield from _expired(old_aliases[key], version, today, "op")


def _expired(
    alias: dict[str, Any], version: tuple[int, int, int], today: datetime.date, what: str
) -> Iterator[str]:
    end = _date(str(alias.get("removeAfter", "")))
    since = version_tuple(str(alias.get("deprecatedIn", "")))
    label = f"deprecated {alias.get('kind')} {alias.get('name')}"
    if end is None or today <= end:
        yield f"{label}: the {what} was removed before its removeAfter {alias.get('removeAfter')}"
    needed = 2 if version[0] >= 1 else 1
    if since is None or _releases_between(since, version) < needed:
        yield (
            f"{label}: the {what} was removed before {needed} minor release(s) after "
            f"{alias.get('deprecatedIn')}"
        )
