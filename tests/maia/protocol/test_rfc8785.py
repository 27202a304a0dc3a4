"""RFC 8785 (JSON Canonicalization Scheme) examples through Maia's digest functions."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
import rfc8785

from maia.core import canonical_json, digest_json

# RFC 8785 section 3.2.2, the input's "string" and "literals" members.
RFC_STRING = "\u20ac$\u000f\u000aA'\u0042\u0022\u005c\\\"/"
RFC_STRING_CANONICAL = '"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"'

# RFC 8785 section 3.2.3: property sorting by UTF-16 code units.
SORTING_INPUT = {
    "\u20ac": "Euro Sign",
    "\r": "Carriage Return",
    "\ufb33": "Hebrew Letter Dalet With Dagesh",
    "1": "One",
    "\U0001f600": "Emoji: Grinning Face",
    "\u0080": "Control",
    "\u00f6": "Latin Small Letter O With Diaeresis",
}
SORTING_CANONICAL = (
    '{"\\r":"Carriage Return","1":"One","\u0080":"Control",'
    '"\u00f6":"Latin Small Letter O With Diaeresis","\u20ac":"Euro Sign",'
    '"\U0001f600":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}'
)


def test_rfc_string_and_literals_example() -> None:
    """Section 3.2.2 without its numbers: escaping and member order as the RFC prints them."""
    value = {"string": RFC_STRING, "literals": [None, True, False]}
    expected = '{"literals":[null,true,false],"string":' + RFC_STRING_CANONICAL + "}"
    assert canonical_json(value) == expected.encode("utf-8")
    assert digest_json(value) == "sha256:" + hashlib.sha256(expected.encode()).hexdigest()


def test_rfc_sorting_example() -> None:
    """Section 3.2.3: keys sort by UTF-16 code units (the emoji before U+FB33)."""
    assert canonical_json(SORTING_INPUT) == SORTING_CANONICAL.encode("utf-8")


def test_rfc8785_package_matches_the_rfc_float_example() -> None:
    """The rfc8785 package prints section 3.2.2's numbers exactly as the RFC does."""
    numbers = [333333333.33333329, 1e30, 4.50, 2e-3, 0.000000000000000000000000001]
    value: Any = {"numbers": numbers, "string": RFC_STRING, "literals": [None, True, False]}
    expected = (
        '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],'
        '"string":' + RFC_STRING_CANONICAL + "}"
    )
    assert rfc8785.dumps(value) == expected.encode("utf-8")


def test_digest_refuses_the_rfc_float_example() -> None:
    """Maia's digests refuse floats by design: they travel as strings."""
    with pytest.raises(ValueError, match="floats"):
        digest_json({"numbers": [333333333.33333329, 1e30]})


def test_integers_in_the_safe_range() -> None:
    """Integers up to 2^53 - 1 print as plain digits; key order does not change the digest."""
    assert canonical_json({"b": 9007199254740991, "a": -1}) == b'{"a":-1,"b":9007199254740991}'
