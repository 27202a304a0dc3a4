"""The conformance package's public surface, and the CLI loading it only when asked."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import maia.conformance

from ..._exports import assert_once_and_resolving, own_exports

FOLDER = Path(maia.conformance.__file__).parent


def test_each_public_name_once() -> None:
    """No name is re-exported twice, each as itself, and each resolves on the package."""
    names = own_exports(FOLDER)
    assert_once_and_resolving("maia.conformance", names)
    assert {"verify_fixtures", "VerifyReport", "load_fixture_set"} <= set(names)


def test_the_contract_commands_load_conformance_only_for_verify() -> None:
    """Importing the contract command group (what `maia contract check` loads) imports no
    part of maia.conformance: the verifier and its Node stay out of the cheap commands."""
    code = "import sys, maia.cli._contract_cmd; print('maia.conformance' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=60)  # fmt: skip
    assert out.stdout.strip() == "False"
