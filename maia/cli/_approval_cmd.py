"""`maia approval allow ID [--remember]` and `maia approval deny ID [--message TEXT]`: aliases
on the command line of `maia approval respond ID --decision allow|deny`, so the registry's
generic mutation (commandId, receipt, output) does the work."""

from __future__ import annotations

from collections.abc import Sequence

_DECISIONS = {"allow": "allow", "deny": "deny"}


def approval_alias(args: Sequence[str]) -> list[str]:
    """`approval allow|deny ...` → `approval respond ... --decision allow|deny`."""
    if len(args) < 2 or args[0] != "approval" or args[1] not in _DECISIONS:
        return list(args)
    rest = list(args[2:])
    if "--help" in rest or "-h" in rest:
        return ["approval", "respond", *rest]
    return ["approval", "respond", *rest, "--decision", _DECISIONS[args[1]]]
