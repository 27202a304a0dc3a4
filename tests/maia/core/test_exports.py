"""`maia.core` re-exports its public names once, stays cheap, and its error set agrees with
itself."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import maia.core
from maia.core import ERROR_CODES, Code, MaiaError

from ..._exports import assert_once_and_resolving, bound_names

INIT = Path(maia.core.__file__)


def test_each_public_name_once() -> None:
    """No name is re-exported twice, and each resolves on the package."""
    assert_once_and_resolving("maia.core", bound_names(INIT))


def test_every_code_is_described_and_every_description_named() -> None:
    """The `Code` enum and the error table name the same closed set."""
    assert {member.value for member in Code} == set(ERROR_CODES)


def test_an_enum_member_is_its_wire_code() -> None:
    """A `MaiaError` built from an enum member carries the plain string code."""
    error = MaiaError(Code.RESOURCE_NOT_FOUND, "gone")
    assert error.code == "resource_not_found"
    assert type(error.code) is str
    assert error.to_wire()["code"] == "resource_not_found"


def _modules_after(statement: str) -> list[str]:
    code = f"import sys; {statement}; print('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.split()


def test_storage_and_supervision_do_not_build_the_registry() -> None:
    """`import storage` and `import supervision` load no part of the operation registry."""
    for statement in ("import storage", "import supervision", "import maia.core"):
        loaded = _modules_after(statement)
        assert [m for m in loaded if m.startswith("maia.protocol")] == [], statement
