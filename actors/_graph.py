"""The actor graph as data: who tells or asks whom, and through which bounded mailbox.

Each kind declares its edges (`Kind.edges`, a tuple of `Edge`); `python -m actors._diagrams`
draws them, with the runtime's own edges (durable timers tell every kind `Fired`), into
`docs/lifecycles.md`, so the picture follows the code.

The rule that keeps the graph free of deadlocks, whatever cycles it has (a routine tells a
Session, whose turn ends and tells the routine): inside its handler an actor asks only the
storage actor (which asks no one back) and only *tells* other actors (a bounded wait for
mailbox space, never for an answer). Anything that must
wait for another actor's answer runs as an effect of the asker (its effect scope), which
reports back with a tell: the reply channel. So no actor's message loop ever waits on
another actor's loop.
"""

from __future__ import annotations

import attrs


@attrs.frozen
class Edge:
    """`source` sends `messages` to `target` by `verb` ("tell" or "ask")."""

    source: str
    target: str
    verb: str
    messages: tuple[str, ...]
    bound: str = ""  # the mailbox or deadline that bounds it
    via_effect: bool = False  # sent from an effect (the reply channel), not the handler


def runtime_edges(kinds: tuple[str, ...]) -> tuple[Edge, ...]:
    """The edges every kind has by running on the runtime."""
    return tuple(
        Edge("timers", kind, "tell", ("Fired",), "the kind's mailbox (64)") for kind in kinds
    )
