"""The console's own keys and its help text (prompt-toolkit's emacs bindings do the rest:
Tab completion, Ctrl-R search, → accepting a suggestion, Ctrl-C clearing, Ctrl-D leaving)."""

from __future__ import annotations

from prompt_toolkit import search
from prompt_toolkit.filters import is_searching
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent

from ._completer import BUILTINS

HELP = (
    """Type any `maia` command without the `maia` prefix, e.g.
  session list            session create --help          turn send REF "text" --wait
Console commands:
"""
    + "".join(f"  {name:<10} {text}\n" for name, text in BUILTINS.items())
    + """Keys: Tab completes · Ctrl-R searches history · → accepts a suggestion · Ctrl-C cancels
the running command · Ctrl-D leaves.
"""
)


def key_bindings() -> KeyBindings:
    """The console's own keys on top of prompt-toolkit's emacs defaults."""
    bindings = KeyBindings()

    @bindings.add("enter", filter=is_searching)
    def _(event: KeyPressEvent) -> None:
        # As in readline: Enter in a Ctrl-R search runs the line found, not just keeps it.
        search.accept_search()
        event.app.current_buffer.validate_and_handle()

    return bindings
