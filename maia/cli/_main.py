"""Entry point of the `maia` console script."""

from __future__ import annotations

import sys

from maia import __version__


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the process exit code."""
    args = sys.argv[1:] if argv is None else argv
    if args in ([], ["--version"]):
        print(f"maia {__version__}")
        return 0
    print(f"maia: unknown command {' '.join(args)!r}", file=sys.stderr)
    return 2
