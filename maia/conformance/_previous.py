"""The previous registry the cross-version cases are checked against: its lock (version,
digest, a digest per op) and its ops' input schemas, two committed files under the fixtures.

"Previous" is the release just before this one (docs/versioning.md: every registry change
is a minor bump, a major one after 1.0): for `X.Y.Z` a version `X.(Y-1).*`, for `X.0.0` one
`(X-1).*.*`. Older files are refused, so a `REGISTRY_VERSION` bump that forgets to refresh
them fails the verifier instead of checking old clients against a registry nobody runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import orjson

from maia.protocol import REGISTRY

from ._format import FixtureFormatError

PREVIOUS_LOCK: Final = "_previous.lock.json"
PREVIOUS_SCHEMAS: Final = "_previous.schemas.json"  # written by previous_snapshot()


def _read_json(path: Path) -> dict[str, Any]:
    try:
        value: dict[str, Any] = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError) as error:
        raise FixtureFormatError(f"{path}: {error}") from None
    return value


def read_previous(fixtures: Path) -> dict[str, Any]:
    """The previous registry: its lock (digests) and its ops' input schemas, one version,
    older than this one."""
    from maia.protocol import REGISTRY_VERSION

    previous = _read_json(fixtures / PREVIOUS_LOCK)
    schemas = _read_json(fixtures / PREVIOUS_SCHEMAS)
    version = str(previous.get("registryVersion", "0"))
    if schemas.get("registryVersion") != version:
        found = schemas.get("registryVersion")
        raise FixtureFormatError(f"{fixtures / PREVIOUS_SCHEMAS}: registry {found}, not the "
                                 f"lock's {version}")  # fmt: skip
    if _version(version) >= _version(REGISTRY_VERSION):
        raise FixtureFormatError(f"{fixtures / PREVIOUS_LOCK}: registry {version} is not "
                                 f"older than {REGISTRY_VERSION}")  # fmt: skip
    if not is_release_before(version, REGISTRY_VERSION):
        raise FixtureFormatError(
            f"{fixtures / PREVIOUS_LOCK}: registry {version} is not the release before "
            f"{REGISTRY_VERSION}: refresh both files from the last commit of that release "
            f"(docs/conformance.md)"
        )
    return {**previous, "inputSchemas": schemas.get("inputSchemas", {})}


def is_release_before(previous: str, current: str) -> bool:
    """Whether `previous` is of the release just before `current` (its minor, or for a new
    major its major): 0.11.x before 0.12.0, 0.12.x before 1.0.0."""
    old, new = _version(previous), _version(current)
    if len(old) != 3 or len(new) != 3 or old >= new:
        return False
    if new[1] == 0:
        return old[0] == new[0] - 1
    return old[:2] == (new[0], new[1] - 1)


def _version(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(part) for part in text.split("."))
    except ValueError:
        return (-1,)


def previous_snapshot() -> dict[str, Any]:
    """What `_previous.schemas.json` holds, from the registry running now: run it on the
    release before a `REGISTRY_VERSION` bump (docs/conformance.md)."""
    from maia.protocol import REGISTRY_VERSION, operation_schema

    schemas = {op.operation_id: operation_schema(op, "input") for op in REGISTRY}
    return {"registryVersion": REGISTRY_VERSION, "inputSchemas": schemas}
