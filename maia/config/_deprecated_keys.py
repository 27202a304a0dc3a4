"""Deprecated configuration keys: moved to their replacement before a file is checked.

The protocol's deprecation table (`maia.protocol.DEPRECATIONS`, kind `config-key`, dotted
paths) names renamed and removed keys; a file that still spells one is read as if it used
the replacement (a removed key is dropped), and each such key is logged to `maia.config`
as one machine-readable `deprecated: {json}` line naming the file (docs/versioning.md).
"""

from __future__ import annotations

import json
import logging
from typing import Any

log = logging.getLogger("maia.config")


def without_deprecated_keys(document: Any, source: str) -> Any:
    """`document` with deprecated keys moved (a copy when any moved), each one logged."""
    from maia.protocol import DEPRECATIONS, apply_config_aliases

    if not any(entry.kind == "config-key" for entry in DEPRECATIONS):
        return document
    document, found = apply_config_aliases(document, DEPRECATIONS)
    for diagnostic in found:
        log.warning("%s: deprecated: %s", source, json.dumps(diagnostic, sort_keys=True))
    return document
