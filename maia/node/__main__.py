"""`python -m maia.node start|status|stop`: the same group as `maia node`.

An entry script, imported by nothing: the click group is the CLI's (it asks a running Node
through the SDK), so the Node's own modules never import the SDK or the CLI.
"""

from maia.cli._node_commands import node_group

if __name__ == "__main__":
    node_group(prog_name="python -m maia.node")
