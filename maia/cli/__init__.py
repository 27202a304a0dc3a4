"""The `maia` command line. Imports stay lazy so `maia --help` is fast."""

from ._main import main as main
