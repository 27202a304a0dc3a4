"""Operation conformance: `maia contract fixtures verify` runs a fixture set per registered
operation against a real Node and checks every answer against the registry.

The fixture format and what is checked are in docs/conformance.md. This package starts
Nodes, so it sits at the top layer beside the CLI.
"""

from ._coverage import static_problems as static_problems
from ._format import Case as Case
from ._format import FixtureFormatError as FixtureFormatError
from ._format import FixtureSet as FixtureSet
from ._format import load_fixture_set as load_fixture_set
from ._format import load_fixture_sets as load_fixture_sets
from ._previous import previous_snapshot as previous_snapshot
from ._probes import load_common as load_common
from ._redaction import redaction_findings as redaction_findings
from ._report import OpReport as OpReport
from ._report import VerifyReport as VerifyReport
from ._verify import verify_fixtures as verify_fixtures
