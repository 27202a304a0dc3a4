"""`python -m maia.node start|status|stop`: the same commands as `maia node`.

An entry script, imported by nothing. `start --home H [--port N]` (how the detached Node
and `./dev run` start) runs the Node without loading click (`_entry`); everything else is
the CLI's click group (it asks a running Node through the SDK), so the Node's own modules
never import the SDK or the CLI.
"""

import sys

from maia.node._entry import run_lean

if __name__ == "__main__":
    code = run_lean(sys.argv[1:])
    if code is None:
        from maia.cli._node_commands import node_group

        node_group(args=sys.argv[1:], prog_name="python -m maia.node")
        code = 0
    sys.exit(code)
