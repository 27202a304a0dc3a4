"""The reviewer's fixtures: a real Node process (`python -m maia.node start`) per module."""

from tests.maia.node.conftest import node_process

__all__ = ["node_process"]
