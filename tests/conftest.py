"""Shared test configuration: Hypothesis profiles.

`ci` is derandomized so a CI run is reproducible; `dev` explores. `./dev test` picks `ci`
when `CI` is set; `HYPOTHESIS_PROFILE` overrides.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("dev", deadline=None, max_examples=100)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))
