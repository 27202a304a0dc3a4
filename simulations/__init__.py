"""A deterministic simulation harness: virtual clocks, a fault-injecting network, named
lease and restart fixtures, and random schedules checked against invariants.

One `random.Random(seed)` drives a run; no global randomness and no wall time reach a
world, so a seed's trace is identical on every run. See docs/simulation.md.
"""

from ._checker import LIVENESS_BOUND_MS as LIVENESS_BOUND_MS
from ._checker import Checker as Checker
from ._checker import Violation as Violation
from ._clocks import PartyClock as PartyClock
from ._duo import Duo as Duo
from ._duo import Expect as Expect
from ._duo import FixtureResult as FixtureResult
from ._faults import PROFILES as PROFILES
from ._faults import Profile as Profile
from ._faults import draw_scenario as draw_scenario
from ._fixtures import FIXTURES as FIXTURES
from ._fixtures import run_fixture as run_fixture
from ._fixtures import run_fixtures as run_fixtures
from ._model import CONTROL as CONTROL
from ._model import ClockSpec as ClockSpec
from ._model import Fault as Fault
from ._model import FaultKind as FaultKind
from ._model import NetworkSpec as NetworkSpec
from ._model import Scenario as Scenario
from ._network import Network as Network
from ._runner import RunResult as RunResult
from ._runner import Summary as Summary
from ._runner import run_many as run_many
from ._runner import run_scenario as run_scenario
from ._runner import run_seed as run_seed
from ._world import World as World
