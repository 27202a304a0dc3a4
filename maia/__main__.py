"""`python -m maia` is the `maia` command."""

import sys

from maia.cli import main

sys.exit(main())
