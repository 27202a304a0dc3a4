"""A strict JSONC reader: JSON plus comments and trailing commas, nothing more.

Why our own: json5 accepts far more than JSONC (unquoted keys, single quotes, hex numbers)
and is slow. This reader is stdlib `json` for strings, with a small recursive-descent
parser around it so that every error names its line and column, duplicate keys are refused,
and NaN, Infinity and deep nesting never get through.
"""

from __future__ import annotations

import bisect
import itertools
import json
import math
import re
from typing import Any, Final

MAX_DEPTH: Final = 64
MAX_BYTES: Final = 1 << 20
# Far above any limit a document holds, far below Python's 4300-digit conversion guard (which
# raises a bare ValueError, not a JsoncError naming line and column).
MAX_INTEGER_DIGITS: Final = 100

_NUMBER: Final = re.compile(r"-?(?:0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?")
_LITERALS: Final = (("true", True), ("false", False), ("null", None))
_scanstring = json.decoder.scanstring  # type: ignore[attr-defined]
# The stdlib's string errors end in "at" (it appends the position, which we say as line
# and column): said whole here.
_STRING_ERRORS: Final = {
    "Invalid control character at": "a raw control character (a line break, a tab) inside a "
    "string: write it as \\n or \\t",
    "Unterminated string starting at": "unterminated string",
}


Path = tuple[str | int, ...]


class JsoncError(ValueError):
    """Malformed JSONC, with the 1-based line and column where reading stopped, and `path`:
    the key being read there (a repeated key's own path; `()` for the document itself)."""

    def __init__(
        self, message: str, text: str, offset: int, source: str = "<jsonc>", path: Path = ()
    ) -> None:
        line = text.count("\n", 0, offset) + 1
        column = offset - (text.rfind("\n", 0, offset) + 1) + 1
        super().__init__(f"{source}:{line}:{column}: {message}")
        self.reason = message
        self.line = line
        self.column = column
        self.source = source
        self.path = path


def loads_jsonc(text: str, source: str = "<jsonc>") -> Any:
    """Parse JSONC text. Raises JsoncError naming line and column for any fault."""
    return _parse(text, source, None)


def loads_jsonc_located(text: str, source: str = "<jsonc>") -> tuple[Any, Locations]:
    """Parse JSONC text and say where each value is (for errors found after parsing).

    Raises JsoncError naming line and column for any fault.
    """
    where: dict[Path, int] = {}
    return _parse(text, source, where), Locations(text, where)


class Locations:
    """Where each value of a parsed document starts: its key for a member, else its value.

    The line starts are found once, on the first question, and each answer is a bisection:
    a file with a problem on every line costs linear time, not a scan per problem.
    """

    def __init__(self, text: str, offsets: dict[Path, int]) -> None:
        self._text = text
        self._offsets = offsets
        self._line_starts: list[int] | None = None

    def line_column(self, path: Path) -> tuple[int, int]:
        """1-based line and column of `path`, or of its nearest located ancestor."""
        while path not in self._offsets and path:
            path = path[:-1]
        offset = self._offsets.get(path, 0)
        if self._line_starts is None:
            lengths = (len(line) + 1 for line in self._text.split("\n"))
            self._line_starts = [0, *itertools.accumulate(lengths)]
        line = bisect.bisect_right(self._line_starts, offset)
        return line, offset - self._line_starts[line - 1] + 1


def _parse(text: str, source: str, where: dict[Path, int] | None) -> Any:
    if len(text.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        raise JsoncError(f"larger than {MAX_BYTES} bytes", text, 0, source)
    if text.startswith("\ufeff"):  # some editors write one; say so rather than "unexpected"
        raise JsoncError("starts with a byte order mark (U+FEFF): save it as UTF-8 without "
                         "one", text, 0, source)  # fmt: skip
    parser = _Parser(text, source, where)
    parser.skip_blank()
    parser.mark(())
    value = parser.value(0, ())
    parser.skip_blank()
    if parser.pos != len(text):
        parser.fail("unexpected text after the document")
    return value


class _Parser:
    def __init__(self, text: str, source: str, where: dict[Path, int] | None):
        self.text = text
        self.source = source
        self.pos = 0
        self.where = where

    def mark(self, path: Path, offset: int | None = None) -> None:
        if self.where is not None:
            self.where[path] = self.pos if offset is None else offset

    def fail(self, message: str, offset: int | None = None, path: Path = ()) -> None:
        at = self.pos if offset is None else offset
        raise JsoncError(message, self.text, at, self.source, path)

    def skip_blank(self) -> None:
        text, n = self.text, len(self.text)
        while self.pos < n:
            char = text[self.pos]
            if char in " \t\r\n":
                self.pos += 1
            elif text.startswith("//", self.pos):
                end = text.find("\n", self.pos)
                self.pos = n if end < 0 else end + 1
            elif text.startswith("/*", self.pos):
                end = text.find("*/", self.pos + 2)
                if end < 0:
                    self.fail("unterminated /* comment")
                self.pos = end + 2
            else:
                return

    def value(self, depth: int, path: Path) -> Any:
        if depth > MAX_DEPTH:
            self.fail(f"nested deeper than {MAX_DEPTH}", path=path)
        self.skip_blank()
        if self.pos >= len(self.text):
            self.fail("unexpected end of input", path=path)
        char = self.text[self.pos]
        if char == "{":
            return self.obj(depth, path)
        if char == "[":
            return self.array(depth, path)
        if char == '"':
            return self.string(path)
        for word, literal in _LITERALS:
            if self.text.startswith(word, self.pos):
                self.pos += len(word)
                return literal
        match = _NUMBER.match(self.text, self.pos)
        if match is None:
            self.fail(f"unexpected character {char!r}", path=path)
            raise AssertionError  # unreachable: fail raises
        start, self.pos = self.pos, match.end()
        if match.group(1) or match.group(2):
            number = float(match.group(0))
            if not math.isfinite(number):  # 1e400 would be Infinity
                self.fail("number out of range", start, path)
            return number
        if len(match.group(0).lstrip("-")) > MAX_INTEGER_DIGITS:
            self.fail(f"integer longer than {MAX_INTEGER_DIGITS} digits", start, path)
        return int(match.group(0))

    def string(self, path: Path) -> str:
        start = self.pos
        try:  # strict: raw control characters (a newline too) are refused inside strings
            value, self.pos = _scanstring(self.text, self.pos + 1, True)
        except json.JSONDecodeError as error:
            self.fail(_STRING_ERRORS.get(error.msg, error.msg), error.pos, path)
        try:  # a lone surrogate escape ("\ud800") is not text: nothing could encode it
            value.encode("utf-8")
        except UnicodeEncodeError:
            self.fail("a lone surrogate escape is not valid Unicode", start, path)
        return str(value)

    def expect(self, char: str, path: Path) -> None:
        self.skip_blank()
        if not self.text.startswith(char, self.pos):
            self.fail(f"expected {char!r}", path=path)
        self.pos += 1

    def obj(self, depth: int, path: Path) -> dict[str, Any]:
        self.pos += 1
        result: dict[str, Any] = {}
        while True:
            self.skip_blank()
            if self.text.startswith("}", self.pos):
                self.pos += 1
                return result
            if not self.text.startswith('"', self.pos):
                self.fail("expected a quoted key or '}'", path=path)
            key_at = self.pos
            key = self.string(path)
            if key in result:
                self.fail(f"duplicate key {key!r}", key_at, (*path, key))
            self.mark((*path, key), key_at)
            self.expect(":", (*path, key))
            result[key] = self.value(depth + 1, (*path, key))
            self.skip_blank()
            if self.text.startswith(",", self.pos):
                self.pos += 1
            elif not self.text.startswith("}", self.pos):
                self.fail("expected ',' or '}'", path=path)

    def array(self, depth: int, path: Path) -> list[Any]:
        self.pos += 1
        result: list[Any] = []
        while True:
            self.skip_blank()
            if self.text.startswith("]", self.pos):
                self.pos += 1
                return result
            self.mark((*path, len(result)))
            result.append(self.value(depth + 1, (*path, len(result))))
            self.skip_blank()
            if self.text.startswith(",", self.pos):
                self.pos += 1
            elif not self.text.startswith("]", self.pos):
                self.fail("expected ',' or ']'", path=path)
