"""The reviewer's fixtures: the real in-process Node of tests/maia/node."""

from tests.maia.node.conftest import node

__all__ = ["node"]
