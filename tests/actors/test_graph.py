"""The actor graph drawn in docs/lifecycles.md comes from the kinds' declarations, and it
obeys the rule that breaks cycles: a handler asks only storage; other asks are effects."""

from __future__ import annotations

from actors._diagrams import kinds, render_graph


def test_every_kind_declares_its_edges_and_they_are_drawn() -> None:
    """Each kind with tables declares edges; each edge appears in the rendered graph."""
    declared = [k for k in kinds() if k.tables]
    assert declared
    text = render_graph()
    for kind in declared:
        assert kind.edges
        for edge in kind.edges:
            assert f"| {edge.source} | {edge.target} |" in text


def test_handlers_ask_only_storage() -> None:
    """No kind's handler waits on another actor's answer: an ask to anything but storage is
    sent from an effect (which reports back with a tell), so no cycle can deadlock."""
    names = {k.name for k in kinds()}
    for kind in kinds():
        for edge in getattr(kind, "edges", ()):
            if edge.verb == "ask" and edge.source in names and not edge.via_effect:
                assert edge.target == "storage", edge
