"""attrs' generated methods, compiled at install like `.pyc` files, for the CLI's start.

attrs writes each class's methods (`__init__`, `__eq__`, `__repr__`, ...) as Python source
when the class is created and compiles it, at every import: on a short command's path some
50 classes of `maia.core` and the registry, about a tenth of its start. `./dev` records
those code objects at install, beside `compileall` (`python -m maia.cli._attrs_cache`), one
file per module next to its bytecode: `__pycache__/<module>.attrs.<interpreter>.marshal`,
`{filename: (source, hash seed, code)}`. With `install()` (the CLI's first step after `--version`),
attrs gets the recorded code for a script whose file name and exact source it has seen,
so what runs is what compiling that source gives; any other script (a class edited since,
another attrs) compiles as before, and a missing or unreadable file changes nothing. The
one part of a script that changes from run to run is the seed attrs writes into
`__hash__` (`hash()` of a name: randomized per process); it is compared as a placeholder
and put back into the recorded code's constants.
It replaces one name, `attr._make.compile`, which attrs looks up at each call; an attrs
without `_compile_and_eval` is left alone. Nothing is written at run time.
"""

from __future__ import annotations

import builtins
import marshal
import re
import sys
from pathlib import Path
from types import CodeType
from typing import Any, Final

PREFIX: Final = "<attrs generated "
SUFFIX: Final = f".attrs.{sys.implementation.cache_tag}.o{sys.flags.optimize}.marshal"
MAX_FILE_BYTES: Final = 4 * 1024 * 1024
Table = dict[str, tuple[str, int | None, CodeType]]
_SEED: Final = re.compile(r"return hash\(\(\n\s*(-?\d+),")
_PLACEHOLDER: Final = "{seed}"


def _normalized(source: str) -> tuple[str, int | None]:
    """The script with its `__hash__` seed (if any) replaced by a placeholder, and the seed."""
    found = _SEED.search(source)
    if found is None:
        return source, None
    start, end = found.span(1)
    return source[:start] + _PLACEHOLDER + source[end:], int(found.group(1))


def _reseeded(code: CodeType, old: int, new: int) -> CodeType:
    """`code` with the integer constant `old` replaced by `new`, in nested code and in
    folded constant tuples (a class without fields hashes the tuple `(seed,)`)."""
    return code.replace(co_consts=tuple(_swap(c, old, new) for c in code.co_consts))


def _swap(value: Any, old: int, new: int) -> Any:
    if isinstance(value, CodeType):
        return _reseeded(value, old, new)
    if type(value) is tuple:
        return tuple(_swap(v, old, new) for v in value)
    return new if type(value) is int and value == old else value


def _module_of(filename: str) -> str | None:
    """`maia.protocol._ops_session` of `<attrs generated methods maia.protocol._ops_session.X>`."""
    if not filename.startswith(PREFIX) or not filename.endswith(">"):
        return None
    dotted = filename[len(PREFIX) : -1].split(" ")[-1].partition("-")[0]
    module, _, _ = dotted.rpartition(".")
    return module or None


def cache_file(module: str) -> Path | None:
    """Where the recorded methods of `module` live (beside its bytecode), if it has a file."""
    found = sys.modules.get(module)
    source = getattr(found, "__file__", None)
    if not isinstance(source, str):
        return None
    path = Path(source)
    return path.parent / "__pycache__" / f"{path.stem}{SUFFIX}"


class _Cache:
    """The per-module tables, each read on its module's first class."""

    def __init__(self, record: bool) -> None:
        self.record = record
        self.tables: dict[str, Table] = {}

    def table(self, module: str) -> Table:
        table = self.tables.get(module)
        if table is None:
            table = {} if self.record else _read(cache_file(module))
            self.tables[module] = table
        return table

    def compile(self, source: Any, filename: Any, mode: str, *args: Any, **kwargs: Any) -> Any:
        module = _module_of(filename) if isinstance(filename, str) else None
        if module is None or args or kwargs or mode != "exec" or not isinstance(source, str):
            return builtins.compile(source, filename, mode, *args, **kwargs)
        table = self.table(module)
        normal, seed = _normalized(source)
        known = table.get(filename)
        if known is not None and known[0] == normal:
            _, recorded, code = known
            if seed is None or recorded is None:
                return code
            return _reseeded(code, recorded, seed)
        code = builtins.compile(source, filename, mode)  # inherits this module's futures,
        if self.record:  # `annotations`, as attrs' own call does from attr._make
            table[filename] = (normal, seed, code)
        return code


def _read(path: Path | None) -> Table:
    if path is None:
        return {}
    try:
        data = path.read_bytes()
        if len(data) > MAX_FILE_BYTES:
            return {}
        loaded = marshal.loads(data)
    except (OSError, ValueError, EOFError, TypeError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


_active: list[_Cache] = []


def install(record: bool = False) -> bool:
    """Give attrs the recorded methods (or, recording, keep what it compiles). Never raises;
    False when attrs has no `_compile_and_eval` to serve."""
    if _active:
        return True
    import attr._make as make

    if not callable(getattr(make, "_compile_and_eval", None)):
        return False
    cache = _Cache(record)
    make.compile = cache.compile  # type: ignore[attr-defined]
    _active.append(cache)
    return True


def record() -> int:
    """Import what the CLI can load, recording attrs' compiled methods, and write one file a
    module; returns how many scripts. Run in a fresh interpreter (`python -m ...`)."""
    if not install(record=True):
        return 0
    import maia.cli._execute
    import maia.cli._invocation
    import maia.cli._quick
    import maia.client._client
    import maia.client._sync
    from maia.protocol import REGISTRY

    for _ in REGISTRY:  # every op module
        pass
    del maia
    count = 0
    for module, table in _active[0].tables.items():
        path = cache_file(module)
        if path is None or not table:
            continue
        path.parent.mkdir(exist_ok=True)
        partial = path.with_name(path.name + ".partial")
        partial.write_bytes(marshal.dumps(table))
        partial.replace(path)
        count += len(table)
    return count


if __name__ == "__main__":
    if "attr" in sys.modules:
        sys.exit("maia.cli._attrs_cache: attrs was imported before recording could start")
    sys.stderr.write(f"attrs methods: {record()} scripts recorded beside the bytecode\n")
