"""Shared test configuration: Hypothesis profiles, and SIGINT as the CLI tests need it.

`ci` is derandomized so a CI run is reproducible; `dev` explores. `./dev test` picks `ci`
when `CI` is set; `HYPOTHESIS_PROFILE` overrides.
"""

from __future__ import annotations

import os
import signal

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

# A suite started in the background of a script (`cmd &`) inherits SIGINT ignored, and so
# would every `maia` it starts, where the Ctrl-C tests send SIGINT. A handler here (not an
# ignore) is reset to the default in each child at exec.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
