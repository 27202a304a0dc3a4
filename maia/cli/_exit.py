"""The CLI's exit codes and the mapping from a typed error to one of them.

0 ok, 1 error, 2 usage, 3 timeout, 4 authentication, 5 the thing waited for failed,
6 Node unreachable, 130 interrupted. Scripts branch on these, so they never change meaning.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from maia.core import MaiaError

OK: Final = 0
ERROR: Final = 1
USAGE: Final = 2
TIMEOUT: Final = 3
AUTHENTICATION: Final = 4
WAITED_FAILED: Final = 5
UNREACHABLE: Final = 6
INTERRUPTED: Final = 130

_BY_CODE: Final = {
    "unauthenticated": AUTHENTICATION,
    "role_denied": AUTHENTICATION,
    "deadline_exceeded": TIMEOUT,
    "validation_failed": USAGE,
    "invalid_request": USAGE,
    "unknown_method": USAGE,
}


def unserved_cursor(operation_id: str, result: object) -> bool:
    """Whether an events.read answered cursor_reset_required or invalid_cursor (a result,
    not an error, but nothing was read: exit 1)."""
    return (
        operation_id == "events.read"
        and isinstance(result, dict)
        and result.get("status", "page") != "page"
    )


def exit_code(error: MaiaError) -> int:
    """The exit code of a failure: `unavailable` from the transport (the Node is not there)
    is 6; the Node's own `unavailable` (a part restarting) is a plain error."""
    if error.code == "unavailable" and error.details.get("target") == "node":
        return UNREACHABLE
    return _BY_CODE.get(error.code, ERROR)
