"""The Routine kind: cron-scheduled Sessions (spec: Scheduled Session operations).

`_schedule` is cron + time zone with Debian cron's DST rules; `_table` the routine and fire
lifecycles; `_core` the pure scheduling step; `_sql` the tables and queries; `_store` one
core event applied in one transaction; `_views` the wire shapes.
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
from ._sql import MAX_LIVE_ROUTINES_PER_PROJECT as MAX_LIVE_ROUTINES_PER_PROJECT
from ._sql import FireRow as FireRow
from ._sql import RoutineRow as RoutineRow
from ._sql import get_fire as get_fire
from ._sql import get_routine as get_routine
from ._sql import insert_routine as insert_routine
from ._sql import launching_fires as launching_fires
from ._sql import list_routines as list_routines
from ._sql import live_routines_in_project as live_routines_in_project
from ._sql import load_core as load_core
from ._sql import next_due_ms as next_due_ms
from ._sql import require_routine as require_routine
from ._sql import routines_to_tick as routines_to_tick
from ._sql import scheduler_send_receipts as scheduler_send_receipts
from ._sql import spend_proof as spend_proof
from ._sql import stoppable_sessions as stoppable_sessions
from ._store import Applied as Applied
from ._store import apply_event as apply_event
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
from ._views import fire_view as fire_view
from ._views import routine_id_for as routine_id_for
from ._views import routine_show as routine_show
from ._views import routine_view as routine_view
