"""The activation line (maxConcurrentActivations): Node and Project limits, fair order, hand-on."""

from __future__ import annotations

from actors import ActivationSlots, Held, Wanted


def test_a_third_request_waits_and_gets_the_first_freed_activation() -> None:
    """With a Node limit of 2 the third Session waits (node, 2); a release hands it the
    activation (reserved for it, not for whoever asks next)."""
    slots = ActivationSlots()
    want = Wanted("p", 2, 2)
    assert slots.request("a", want) == (True, [])
    assert slots.request("b", want) == (True, [])
    assert slots.request("c", want) == (False, [])
    assert slots.held_by("c") == Held("node", 2)
    assert slots.request("d", want) == (False, [])
    assert slots.release("a") == ["c"]
    assert slots.holds("c")
    assert not slots.holds("d")
    assert slots.request("e", want) == (False, [])  # d is ahead of e
    assert slots.release("b") == ["d"]


def test_project_limit_holds_one_project_but_not_another() -> None:
    """A Project at its own limit waits (project, 1) while another Project's Session is
    served past it in line."""
    slots = ActivationSlots()
    assert slots.request("a", Wanted("p", 4, 1))[0]
    assert slots.request("b", Wanted("p", 4, 1)) == (False, [])
    assert slots.held_by("b") == Held("project", 1)
    assert slots.request("c", Wanted("q", 4, 4)) == (True, [])
    assert slots.release("a") == ["b"]
    assert (slots.used, slots.by_project) == (2, {"p": 1, "q": 1})


def test_a_raised_limit_serves_the_line_in_order() -> None:
    """A later request carrying a raised limit (an admission) applies it to the whole line
    and grants the earlier waiter first; forget takes a Session out of line."""
    slots = ActivationSlots()
    assert slots.request("a", Wanted("p", 1, 1))[0]
    assert not slots.request("b", Wanted("p", 1, 1))[0]
    assert not slots.request("c", Wanted("p", 1, 1))[0]
    slots.forget("c")
    assert slots.request("d", Wanted("p", 3, 3)) == (True, ["b"])
    assert slots.held_by("c") is None
    assert not slots.holds("c")
    assert slots.release("a") == []
    assert slots.used == 2
