"""What the agent executors add to a Session and a turn on the wire: the approval prompt a
Session waits on (spec E13: `status` and `prompt`) and per-turn usage with Session totals.
"""

from __future__ import annotations

from typing import Literal

import attrs

from maia.core._field_kinds import id_field, timestamp_field
from maia.core._fields import field, spec

MAX_PROMPT_SUMMARY_BYTES = 8192
MAX_PROMPT_OPTIONS = 8
SessionStatus = Literal[
    "starting", "working", "compacting", "rate_limited", "idle", "question", "approval",
    "error", "done", "ended", "unknown",
]  # fmt: skip


@attrs.frozen
class SessionPrompt:
    """The approval a Session waits on: the text a person reads (session.list names it by
    approvalId, kind and expiresAt only)."""

    approval_id: str = id_field("The approval (approval.respond answers it).")
    kind: str = field(doc="What it asks about: command, file_change, tool, question, ...",
                      min_length=1, max_length=64)  # fmt: skip
    expires_at: str | None = timestamp_field("When it expires (absent: never).", default=None)
    summary: str | None = field(doc="What the agent wants to do (at most 8 KiB).", default=None,
                                max_length=MAX_PROMPT_SUMMARY_BYTES,
                                length_unit="utf8-bytes")  # fmt: skip
    options: tuple[str, ...] | None = field(
        doc="The answers offered.", default=None, max_items=MAX_PROMPT_OPTIONS,
        items=spec(min_length=1, max_length=64),
    )  # fmt: skip


@attrs.frozen
class Usage:
    """Tokens and cost, per turn (the harness's running totals turned into differences) or
    summed over a Session's turns."""

    input_tokens: int | None = field(doc="Input tokens.", default=None, minimum=0)
    output_tokens: int | None = field(doc="Output tokens.", default=None, minimum=0)
    cache_read_tokens: int | None = field(doc="Cache-read input tokens.", default=None,
                                          minimum=0)  # fmt: skip
    cache_write_tokens: int | None = field(doc="Cache-write input tokens.", default=None,
                                           minimum=0)  # fmt: skip
    cost_micros: int | None = field(doc="Cost in micro-units of the currency, when reported.",
                                    default=None, minimum=0)  # fmt: skip
    currency: str | None = field(doc="The cost's currency (USD).", default=None, max_length=16)
    model: str | None = field(doc="The model (per turn).", default=None, max_length=64)
    turns: int | None = field(doc="Turns counted (Session totals).", default=None, minimum=0)
