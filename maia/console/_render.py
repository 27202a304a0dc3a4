"""How a live event reads when it is printed above the prompt: one short line.

Only what a person follows is printed (Sessions created, renamed, archived, changing state;
turns queued and ending); the rest (activity, dispatch, item text) stays in the journal and
in `attach`. Long titles and reasons are cut so a line stays one line.
"""

from __future__ import annotations

from ._cache import FeedEvent, SessionCache

_SHOWN_TURN_EVENTS = frozenset({"turn.queued", "turn.completed", "turn.failed", "turn.interrupted"})
_HIDDEN_SESSION_EVENTS = frozenset({"session.activity.changed"})
MAX_FIELD = 60


def _cut(text: str) -> str:
    return text if len(text) <= MAX_FIELD else text[: MAX_FIELD - 1] + "…"


def render_event(event: FeedEvent, cache: SessionCache) -> str | None:
    """The line for `event`, or None when it is not shown."""
    kind = event.event_type
    if kind == "console.gap":
        return f"… events were skipped ({event.payload.get('reason')}): the feed caught up"
    if kind == "approval.requested":
        return _approval_line(event, cache)
    shown_session = kind.startswith("session.") and kind not in _HIDDEN_SESSION_EVENTS
    if not shown_session and kind not in _SHOWN_TURN_EVENTS:
        return None
    clock = event.occurred_at[11:19] if len(event.occurred_at) >= 19 else "--:--:--"
    sid = event.session_id or "?"
    cached = cache.get(sid)
    title = event.payload.get("title") or (cached.title if cached else None)
    who = f'{sid} "{_cut(title)}"' if title else sid
    detail = ""
    if kind.startswith("turn."):
        detail = f" {event.turn_id or ''}"
        reason = event.payload.get("reason")
        if reason:
            detail += f" ({_cut(str(reason))})"
    elif "state" in event.payload and kind != "session.created":
        detail = f" → {event.payload['state']}"
    return f"[{clock}] {kind} {who}{detail}"


def _approval_line(event: FeedEvent, cache: SessionCache) -> str:
    """A pending approval, with what it asks and the two commands that answer it."""
    clock = event.occurred_at[11:19] if len(event.occurred_at) >= 19 else "--:--:--"
    sid = event.session_id or "?"
    cached = cache.get(sid)
    who = f'{sid} "{_cut(cached.title)}"' if cached and cached.title else sid
    approval = event.payload.get("approvalId", "?")
    what = _cut(str(event.payload.get("summary") or event.payload.get("kind") or ""))
    return (f"[{clock}] approval waiting {who}: {what}\n"
            f"    maia approval allow {approval}  |  maia approval deny {approval}")  # fmt: skip
