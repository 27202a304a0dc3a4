"""Every handler module of the Node, imported once so their registrations run.

A later issue that serves more ops adds its module here (one line) and registers each
handler with `@HANDLERS.handler("<operation id>")`.
"""

from __future__ import annotations

from . import _handlers_node as _handlers_node
