"""hypothesis-jsonschema 0.23.1 against Hypothesis 6.170: a shim for one moved internal.

hypothesis-jsonschema draws object members through `cu.many(...).more()`, an internal API
that Hypothesis replaced by a context manager and an iterator. `OldMany` offers the old
surface on top of the new one; the tests patch it in for their own duration only.
"""

from __future__ import annotations

import types
from collections.abc import Iterator
from typing import Any

from hypothesis.internal.conjecture import utils


class OldMany:
    """The pre-6.1xx `many` surface (`more()`, `reject()`) over the current `many`."""

    def __init__(self, data: Any, min_size: int, max_size: float, average_size: float) -> None:
        self._many = utils.many(data, min_size, max_size, average_size)
        self._many.__enter__()
        self._iterator: Iterator[None] | None = iter(self._many)

    def more(self) -> bool:
        if self._iterator is None:
            return False
        try:
            next(self._iterator)
        except StopIteration:
            self._iterator = None
            self._many.__exit__(None)
            return False
        return True

    def reject(self, why: str | None = None) -> None:
        self._many.reject(why)


def needs_shim() -> bool:
    return not hasattr(utils.many, "more")


SHIM = types.SimpleNamespace(many=OldMany)
