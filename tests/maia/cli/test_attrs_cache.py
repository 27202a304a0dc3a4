"""The CLI's compiled attrs methods (`maia.cli._attrs_cache`): recorded as `./dev` does, they
serve every class on a short command's path with the code compiling would give (the
per-process `__hash__` seed put back: only the column of that constant in the line table
may differ); an edited script or a broken file falls back to compiling."""

from __future__ import annotations

import json
import marshal
import subprocess
import sys
from pathlib import Path

from maia.cli import _attrs_cache
from maia.cli._attrs_cache import _Cache, _normalized, _reseeded

TIMEOUT_S = 120

# In a fresh interpreter: install, build the session ops' classes, and for every script
# attrs asked for, say whether the cache served it and whether the code it ran is the code
# a fresh compile of that very source gives.
_CHECK = r"""
from __future__ import annotations  # as attr._make has: compile() inherits it
import builtins, json, marshal, sys
import maia.cli._attrs_cache as cache
assert cache.install()
served = cache._active[0]
report = {"hits": 0, "misses": 0, "same": 0, "different": []}
original = served.compile
FIELDS = ("co_code", "co_names", "co_varnames", "co_freevars", "co_cellvars", "co_flags",
          "co_argcount", "co_kwonlyargcount", "co_posonlyargcount", "co_stacksize",
          "co_firstlineno", "co_filename", "co_name", "co_qualname", "co_exceptiontable")
def same(a, b, seeded):
    # Everything but the line table's columns where a seed of another length was put back.
    if any(getattr(a, f) != getattr(b, f) for f in FIELDS):
        return False
    if not seeded and a.co_linetable != b.co_linetable:
        return False
    if len(a.co_consts) != len(b.co_consts):
        return False
    for x, y in zip(a.co_consts, b.co_consts):
        if hasattr(x, "co_code"):
            if not (hasattr(y, "co_code") and same(x, y, seeded)):
                return False
        elif type(x) is not type(y) or x != y:
            return False
    return True
def checked(source, filename, mode, *args, **kwargs):
    code = original(source, filename, mode, *args, **kwargs)
    module = cache._module_of(filename)
    if module is not None and module.startswith("maia."):
        normal, _ = cache._normalized(source)
        known = served.table(module).get(filename)
        report["hits" if known is not None and known[0] == normal else "misses"] += 1
        fresh = builtins.compile(source, filename, mode)
        if same(fresh, code, normal != source):
            report["same"] += 1
        else:
            report["different"].append(filename)
    return code
import attr._make
attr._make.compile = checked
from maia.cli._invocation import parse_invocation
parse_invocation(["session", "list", "--json"])
parse_invocation(["node", "status"])
print(json.dumps(report))
"""


def _record() -> None:
    subprocess.run([sys.executable, "-m", "maia.cli._attrs_cache"], check=True,
                   capture_output=True, timeout=TIMEOUT_S)  # fmt: skip


def test_recorded_methods_serve_the_path_with_the_code_compiling_gives() -> None:
    """After recording, every maia class on `session list` and `node status` is served from
    the files, and each served code object equals a fresh compile of the source."""
    _record()
    done = subprocess.run([sys.executable, "-c", _CHECK], capture_output=True, text=True,
                          timeout=TIMEOUT_S, check=True)  # fmt: skip
    report = json.loads(done.stdout)
    assert report["different"] == []
    assert report["same"] == report["hits"] + report["misses"]
    assert report["hits"] >= 40
    assert report["misses"] <= 1


def test_an_edited_script_compiles_and_the_seed_is_put_back(tmp_path: Path) -> None:
    """A script whose source differs from the recorded one is compiled, not served; one that
    differs only in its `__hash__` seed is served with the new seed in its constants."""
    source = (
        "def __hash__(self):\n        return hash((\n                12345,\n        self.a))\n"
    )
    filename = "<attrs generated methods maia.fake.Thing>"
    recording = _Cache(record=True)
    recording.tables["maia.fake"] = {}
    recording.compile(source, filename, "exec")
    serving = _Cache(record=False)
    serving.tables["maia.fake"] = recording.tables["maia.fake"]
    reseeded = source.replace("12345", "-987")
    code = serving.compile(reseeded, filename, "exec")
    function, fresh = code.co_consts[0], compile(reseeded, filename, "exec").co_consts[0]
    assert (function.co_code, function.co_consts) == (fresh.co_code, fresh.co_consts)
    assert -987 in function.co_consts
    assert 12345 not in function.co_consts
    edited = source.replace("self.a", "self.b")
    assert serving.compile(edited, filename, "exec") == compile(edited, filename, "exec")
    assert _normalized(source)[1] == 12345
    assert _reseeded(compile("x = 5", "f", "exec"), 5, 6).co_consts[0] == 6


def test_a_broken_file_is_ignored(tmp_path: Path) -> None:
    """An unreadable or foreign cache file serves nothing (the script is compiled)."""
    broken = tmp_path / "broken.marshal"
    broken.write_bytes(b"\x00not marshal")
    assert _attrs_cache._read(broken) == {}
    foreign = tmp_path / "foreign.marshal"
    foreign.write_bytes(marshal.dumps([1, 2, 3]))
    assert _attrs_cache._read(foreign) == {}
    assert _attrs_cache._read(tmp_path / "missing.marshal") == {}
    assert _attrs_cache._read(None) == {}
