"""`python -m maia.node start|status|stop`."""

from ._commands import node_group

if __name__ == "__main__":
    node_group(prog_name="python -m maia.node")
