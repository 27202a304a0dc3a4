"""Every handler module of the Node, imported once so their registrations run.

A later issue that serves more ops adds its module here (one line) and registers each
handler with `@HANDLERS.handler("<operation id>")`.
"""

from __future__ import annotations

from maia.service import register as _register_sessions

from . import _handlers_node as _handlers_node
from ._dispatch import HANDLERS

# Projects, Sessions, turns, references, receipts and events (maia.service, issue 7): their
# context is the `sessions` entry of the Node's services.
_register_sessions(HANDLERS, lambda call: call.services.sessions_or_raise())
