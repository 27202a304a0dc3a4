"""The redaction scan: no planted secret, bearer token, credential header or environment
dump in anything a fixture set made the Node say (frames, events, log records, log files).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import Final

CREDENTIAL_HEADER: Final = re.compile(r"(?i)authorization\s*[:=]\s*\"?(bearer|basic)\s+[A-Za-z0-9]")
# The whole PATH value in an answer is an environment dump, not a path someone named.
_ENV_MARKERS: Final = ("PATH",)


def redaction_findings(
    texts: Iterable[tuple[str, str]], secrets: dict[str, str], *, generic: bool = True
) -> list[str]:
    """One finding per (where, what) leak; `texts` are (where, text), `secrets` name -> value.
    `generic` adds the credential header and environment dump checks."""
    markers = {**secrets}
    for name in _ENV_MARKERS if generic else ():
        value = os.environ.get(name, "")
        if len(value) >= 16:
            markers[f"the environment's {name}"] = value
    findings: list[str] = []
    for where, text in texts:
        for name, value in markers.items():
            if value and value in text:
                findings.append(f"{where} contains {name}")
        if generic and CREDENTIAL_HEADER.search(text):
            findings.append(f"{where} contains a credential header")
    return sorted(set(findings))
