"""A 1 MiB file with an unknown key on every line is checked in linear time: each problem's
line and column used to be found by counting newlines from the start of the text, so
~88,000 problems took ~18 s of CPU (the GIL held: the Node stood still) at every check,
preview and node.status of it. Measured by work done, not by a clock: the characters the
text's own scans (count, rfind, find, split) go over."""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import Any, SupportsIndex

from maia.config import Locations, user_candidate

LINES = 20_000


class CountingText(str):
    """A text that adds up how many characters its scanning methods go over."""

    scanned = 0

    def _span(self, start: SupportsIndex | None, end: SupportsIndex | None) -> int:
        return len(range(len(self))[slice(start, end)])

    def count(self, sub: str, start: Any = None, end: Any = None) -> int:
        CountingText.scanned += self._span(start, end)
        return super().count(sub, start, end)

    def rfind(self, sub: str, start: Any = None, end: Any = None) -> int:
        CountingText.scanned += self._span(start, end)
        return super().rfind(sub, start, end)

    def find(self, sub: str, start: Any = None, end: Any = None) -> int:
        CountingText.scanned += self._span(start, end)
        return super().find(sub, start, end)

    def split(self, sep: Any = None, maxsplit: SupportsIndex = -1) -> list[str]:
        CountingText.scanned += len(self)
        return super().split(sep, maxsplit)


def test_locating_every_line_is_linear() -> None:
    """A located value on each of 20,000 lines: the answers are those of counting newlines,
    and the scans go over the text a bounded number of times, not once per question."""
    lines = [f'"k{i}": 1,\n' for i in range(LINES)]
    raw = "{\n" + "".join(lines) + "}"
    starts = list(itertools.accumulate((len(line) for line in lines), initial=2))[:LINES]
    where: dict[tuple[str | int, ...], int] = {(f"k{i}",): at for i, at in enumerate(starts)}
    locations = Locations(CountingText(raw), where)
    CountingText.scanned = 0
    found = [locations.line_column(path) for path in where]
    assert found == [(i + 2, 1) for i in range(LINES)]
    assert CountingText.scanned <= 2 * len(raw)


def test_line_and_column_as_before() -> None:
    """Offsets on the first line, after a newline, at the end: the answers of counting."""
    text = "ab\n\ncd\nef"
    where = {(): 0, ("a",): 1, ("b",): 3, ("c",): 4, ("d",): 6, ("e",): 9}
    locations = Locations(text, where)  # type: ignore[arg-type]
    for path, offset in where.items():
        line = text.count("\n", 0, offset) + 1
        column = offset - (text.rfind("\n", 0, offset) + 1) + 1
        assert locations.line_column(path) == (line, column)


def test_a_file_of_problems_names_each_line(tmp_path: Path) -> None:
    """Through the admission reader: one problem per line, each at its own line, column 1."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (home / "config.jsonc").write_text("{\n" + "".join(f'"k{i}": 1,\n' for i in range(LINES)) + "}")
    os.chmod(home / "config.jsonc", 0o600)
    problems = user_candidate(str(home)).problems
    assert [(p.path, p.line, p.column) for p in problems] == [
        (f"k{i}", i + 2, 1) for i in range(LINES)
    ]
