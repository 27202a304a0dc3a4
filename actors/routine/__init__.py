"""The Routine kind: cron-scheduled Sessions (spec: Scheduled Session operations).

`_schedule` is cron + time zone with Debian cron's DST rules; `_table` the routine and fire
lifecycles; `_core` the pure scheduling step; `_sql` the tables and queries.
"""

from ._core import MAX_LAUNCHES_PER_TICK as MAX_LAUNCHES_PER_TICK
from ._core import MAX_MISSED_RECORDS as MAX_MISSED_RECORDS
from ._core import Action as Action
from ._core import Attached as Attached
from ._core import AttachSession as AttachSession
from ._core import Candidate as Candidate
from ._core import Core as Core
from ._core import Disable as Disable
from ._core import Event as Event
from ._core import Fire as Fire
from ._core import Launched as Launched
from ._core import LaunchPlan as LaunchPlan
from ._core import LaunchRefused as LaunchRefused
from ._core import Pause as Pause
from ._core import RecordFire as RecordFire
from ._core import Recover as Recover
from ._core import Resume as Resume
from ._core import Run as Run
from ._core import SetRoutine as SetRoutine
from ._core import SlotsOmitted as SlotsOmitted
from ._core import Tick as Tick
from ._core import Trigger as Trigger
from ._core import TurnSettled as TurnSettled
from ._core import cron_fire_id as cron_fire_id
from ._core import held_error as held_error
from ._core import judge_run as judge_run
from ._core import manual_fire_id as manual_fire_id
from ._core import plan_launches as plan_launches
from ._core import step as step
from ._schedule import CATCH_UP_WINDOW_MS as CATCH_UP_WINDOW_MS
from ._schedule import MIN_INTERVAL_MS as MIN_INTERVAL_MS
from ._schedule import Missed as Missed
from ._schedule import Schedule as Schedule
from ._schedule import Slot as Slot
from ._table import FIRE_TABLE as FIRE_TABLE
from ._table import ROUTINE_TABLE as ROUTINE_TABLE
from ._table import ROUTINE_TABLES as ROUTINE_TABLES
from ._table import SATURATION_DEADLINE_MS as SATURATION_DEADLINE_MS
from ._table import FailReason as FailReason
from ._table import FireEvent as FireEvent
from ._table import FireState as FireState
from ._table import RoutineEvent as RoutineEvent
from ._table import RoutineState as RoutineState
from ._table import SkipReason as SkipReason
