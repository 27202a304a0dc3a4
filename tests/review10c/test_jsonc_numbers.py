"""A number the reader cannot hold is a syntax problem with its line and column: `1e400`
(Infinity as a float) and an integer of thousands of digits (Python's conversion guard
raised a bare ValueError, and `maia config check` died with a traceback). And a leading
byte order mark is named as one."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from maia.config import JsoncError, loads_jsonc
from tests.maia.cli._node import Cli

HUGE = "9" * 5000
TEXTS = [
    ('{\n  "a": 1e400\n}', 2, 8),
    ('{\n  "a": -1E+999\n}', 2, 8),
    ('{\n  "a": ' + HUGE + "\n}", 2, 8),
    ('{\n  "a": -' + HUGE + "\n}", 2, 8),
]


@pytest.mark.parametrize(("text", "line", "column"), TEXTS)
def test_the_reader_refuses_it_where_it_stands(text: str, line: int, column: int) -> None:
    """JsoncError (not ValueError, not inf) at the number's line and column."""
    with pytest.raises(JsoncError) as caught:
        loads_jsonc(text)
    assert (caught.value.line, caught.value.column) == (line, column)


def test_ordinary_numbers_still_read() -> None:
    """The bound sits far above any limit: 100 digits and 1e308 still read."""
    assert loads_jsonc("[" + "9" * 100 + ", 1e308, -0, 0.5]") == [int("9" * 100), 1e308, 0, 0.5]


@pytest.mark.parametrize("number", ["1e400", HUGE])
def test_config_check_reports_it(tmp_path: Path, number: str) -> None:
    """`maia config check`: exit 2, the problem with file:line:column."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    path = home / "config.jsonc"
    path.write_text('{"swarm": {"capacity": {\n  "maxLiveSessions": ' + number + "}}}")
    os.chmod(path, 0o600)
    result: subprocess.CompletedProcess[str] = Cli(home, tmp_path)("config", "check", "--json")
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    (problem,) = json.loads(result.stdout)["problems"]
    assert (problem["source"], problem["line"], problem["column"]) == (str(path), 2, 22)


def test_a_byte_order_mark_is_named() -> None:
    """A file an editor saved with a BOM: refused at 1:1 saying so, not "unexpected '\\ufeff'"."""
    with pytest.raises(JsoncError) as caught:
        loads_jsonc('\ufeff{"swarm": {}}')
    assert (caught.value.line, caught.value.column) == (1, 1)
    assert "byte order mark" in caught.value.reason
