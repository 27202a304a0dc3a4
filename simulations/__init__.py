"""A deterministic simulation harness: virtual clocks, a fault-injecting network, named
lease and restart fixtures, and random schedules checked against invariants.

One `random.Random(seed)` drives a run; no global randomness and no wall time reach a
world, so a seed's trace is identical on every run. See docs/simulation.md.

For real runs: `start_proxy` puts a fault-injecting WebSocket proxy on loopback between two
real Nodes, and `check_trace` judges a real run's trace by the same `Checker`.
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
from ._proxy import LoopbackProxy as LoopbackProxy
from ._proxy import start_proxy as start_proxy
from ._proxy_link import Direction as Direction
from ._proxy_link import Fate as Fate
from ._proxy_link import LinkFaults as LinkFaults
from ._proxy_link import NotLoopback as NotLoopback
from ._proxy_link import ProxyError as ProxyError
from ._proxy_link import ProxyEvent as ProxyEvent
from ._proxy_relay import ProxySettings as ProxySettings
from ._runner import RunResult as RunResult
from ._runner import Summary as Summary
from ._runner import run_many as run_many
from ._runner import run_scenario as run_scenario
from ._runner import run_seed as run_seed
from ._trace import TRACE_SCHEMA as TRACE_SCHEMA
from ._trace import TraceError as TraceError
from ._trace import TraceVerdict as TraceVerdict
from ._trace import TraceWriter as TraceWriter
from ._trace import check_trace as check_trace
from ._trace import merge_traces as merge_traces
from ._trace import parse_event as parse_event
from ._trace import read_trace as read_trace
from ._world import World as World
