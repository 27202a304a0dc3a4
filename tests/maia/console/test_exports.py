"""`maia.console` re-exports its public names once, and `run_console` is among them."""

from __future__ import annotations

import inspect
from pathlib import Path

import maia.console

from ..._exports import bound_names

INIT = Path(maia.console.__file__)


def test_each_public_name_once() -> None:
    """No name is re-exported twice; each resolves on the package and was defined in one of
    its private modules; `run_console` (what `maia console` calls) takes only keywords."""
    names = bound_names(INIT)
    assert len(names) == len(set(names))
    for name in names:
        value = getattr(maia.console, name)
        assert value.__module__.startswith("maia.console._"), name
    parameters = inspect.signature(maia.console.run_console).parameters.values()
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in parameters)
