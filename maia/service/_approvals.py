"""approval.list, show, respond. Reads go to storage; a response goes to the Session's actor,
which records it (idempotent, with a receipt) and answers the worker's waiting tool call."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final

from actors.session import RespondApproval, list_approvals, read_approval, session_of_approval
from maia.core import check
from maia.protocol import (
    ApprovalListInput,
    ApprovalListOutput,
    ApprovalRef,
    ApprovalRespondInput,
    ApprovalRespondOutput,
    ApprovalShowOutput,
)

from ._context import ServiceContext, command_of, mutation_output
from ._page_bytes import approval_bytes, fitting
from ._paging import issue, open_cursor


async def approval_list(ctx: ServiceContext, params: ApprovalListInput) -> ApprovalListOutput:
    """Pending first, then newest first. Raises `invalid_cursor`, `cursor_reset_required`."""
    filters = {"sessionId": params.session_id, "state": params.state}
    after = None
    if params.cursor is not None:
        after = open_cursor(ctx.store, params.cursor, "approval.list", filters)
    rows = await ctx.read(lambda c: list_approvals(c, params.session_id, params.state,
                                                   params.limit + 1, after))  # fmt: skip
    page = rows[: params.limit]
    kept = fitting([approval for _, approval in page], approval_bytes)  # under the 1 MiB frame
    cursor = None
    if len(rows) > params.limit or kept < len(page):
        page = page[:kept]
        cursor = issue(ctx.store, page[-1][0], "approval.list", filters)
    approvals = [approval for _, approval in page]
    return check(ApprovalListOutput, {"approvals": approvals, "nextCursor": cursor}, root="result")


async def approval_show(ctx: ServiceContext, params: ApprovalRef) -> ApprovalShowOutput:
    """Raises `resource_not_found`."""
    found = await ctx.read(lambda c: read_approval(c, params.approval_id))
    return check(ApprovalShowOutput, {"approval": found}, root="result")


async def approval_respond(
    ctx: ServiceContext, params: ApprovalRespondInput
) -> ApprovalRespondOutput:
    """Raises `resource_not_found`, `approval_not_pending`, `idempotency_conflict`."""
    session_id, _ = await ctx.read(lambda c: session_of_approval(c, params.approval_id))
    message = RespondApproval(command_of(params), params.approval_id, params.decision,
                              params.remember, params.message)  # fmt: skip
    result = await ctx.sessions.ask(session_id, message)
    return mutation_output(ApprovalRespondOutput, result)


APPROVAL_HANDLERS: Final[dict[str, Callable[[ServiceContext, Any], Awaitable[Any]]]] = {
    "approval.list": approval_list,
    "approval.show": approval_show,
    "approval.respond": approval_respond,
}
