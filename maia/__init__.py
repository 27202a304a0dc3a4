"""Maia: a local node service that runs AI-agent Sessions in supervised worker processes.

This package holds the faces and the wiring (`maia.protocol`, the Node, the SDK, the CLI and
the console). Importing it stays cheap: nothing here imports the Node or the CLI eagerly.
"""

__version__ = "0.1.0"
