"""RetentionPolicyV1 of a Project file, in the shape Maia documents (the spec lists what it
sets: a TTL per class, legal hold, erasure behaviour, what may remain, no raw audio):

    "retention": {
      "ttlDays": {"events": 30, "traces": 7, "artifacts": 30, "transcripts": 30,
                  "evaluations": 30, "exports": 7, "receipts": 30},   // each 1..3650
      "legalHold": false,
      "erasure": "delete" | "crypto-erase",
      "remains": "nothing" | "digest" | "tombstone",
      "rawAudio": false          // always false in v1
    }

Receipts are kept at least 30 days (spec: keys and receipts never less than 30 days).
Validated and admitted; not applied by the Node yet (docs/configuration.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import attrs

from ._problems import Checker

CLASSES: Final = ("events", "traces", "artifacts", "transcripts", "evaluations", "exports",
                  "receipts")  # fmt: skip
MIN_RECEIPT_DAYS: Final = 30
MAX_DAYS: Final = 3650


@attrs.frozen
class RetentionPolicy:
    ttl_days: Mapping[str, int] = attrs.field(factory=dict)
    legal_hold: bool = False
    erasure: str = "delete"
    remains: str = "digest"


def read_retention(checker: Checker, value: Any) -> RetentionPolicy:
    path = ("retention",)
    body = checker.obj(value, path, {"ttlDays", "legalHold", "erasure", "remains", "rawAudio"})
    ttl_body = checker.obj(body.get("ttlDays", {}), (*path, "ttlDays"), set(CLASSES))
    ttl: dict[str, int] = {}
    for name in CLASSES:
        if name in ttl_body:
            low = MIN_RECEIPT_DAYS if name == "receipts" else 1
            ttl[name] = checker.integer(ttl_body[name], (*path, "ttlDays", name), low, MAX_DAYS,
                                        MIN_RECEIPT_DAYS)  # fmt: skip
    hold = checker.boolean(body.get("legalHold", False), (*path, "legalHold"), False)
    erasure: str | None = "delete"
    if "erasure" in body:
        erasure = checker.choice(body["erasure"], (*path, "erasure"), ("delete", "crypto-erase"))
    remains: str | None = "digest"
    if "remains" in body:
        remains = checker.choice(body["remains"], (*path, "remains"),
                                 ("nothing", "digest", "tombstone"))  # fmt: skip
    if "rawAudio" in body and body["rawAudio"] is not False:
        checker.report((*path, "rawAudio"), "must be false (raw audio is never kept in v1)")
    return RetentionPolicy(ttl, hold, erasure or "delete", remains or "digest")
