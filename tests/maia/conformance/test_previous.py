"""The previous registry the cross-version cases run against is the release just before this
one: the committed files are, and files of an older or a newer one are refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from maia.conformance import FixtureFormatError
from maia.conformance._previous import is_release_before, read_previous
from maia.protocol import REGISTRY_VERSION

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "ops"


def test_the_committed_previous_registry_is_the_release_before_this_one() -> None:
    """_previous.lock.json and _previous.schemas.json describe the release before
    REGISTRY_VERSION, with an input schema for each op that release had."""
    previous = read_previous(FIXTURES)
    assert is_release_before(previous["registryVersion"], REGISTRY_VERSION)
    assert set(previous["inputSchemas"]) == set(previous["operations"])


@pytest.mark.parametrize(
    ("previous", "current", "before"),
    [
        ("0.11.0", "0.12.0", True),
        ("0.11.3", "0.12.1", True),
        ("0.12.4", "1.0.0", True),
        ("1.3.0", "2.0.0", True),
        ("0.9.0", "0.12.0", False),
        ("0.12.0", "0.12.1", False),  # a patch leaves the digest alone: compare the minor
        ("0.12.0", "0.12.0", False),
        ("0.13.0", "0.12.0", False),
        ("0.11", "0.12.0", False),
        ("x.y.z", "0.12.0", False),
        ("0.12.0", "2.0.0", False),
    ],
)  # fmt: skip
def test_which_version_is_the_release_before(previous: str, current: str, before: bool) -> None:
    """The release before X.Y.Z is any X.(Y-1).*; before X.0.0 any (X-1).*.*."""
    assert is_release_before(previous, current) is before


def test_files_of_an_older_release_are_refused_naming_the_refresh(tmp_path: Path) -> None:
    """A lock two releases back (as the files were at 0.9.0) fails the verifier's read,
    naming the file and how to refresh it."""
    folder = tmp_path / "ops"
    folder.mkdir()
    for name in ("_previous.lock.json", "_previous.schemas.json"):
        document = json.loads((FIXTURES / name).read_text())
        document["registryVersion"] = "0.1.0"
        (folder / name).write_text(json.dumps(document))
    with pytest.raises(FixtureFormatError) as refused:
        read_previous(folder)
    assert "_previous.lock.json: registry 0.1.0 is not the release before" in str(refused.value)
    assert "refresh both files" in str(refused.value)
