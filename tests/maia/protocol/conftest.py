"""Fixtures: the real Node of the node tests (served in the test's trio run, on loopback)."""

from __future__ import annotations

from tests.maia.node.conftest import node as node

__all__ = ["node"]
