"""The interactive console (`maia console`): the CLI's grammar at a prompt-toolkit prompt,
on one long-lived SDK client, with completion from a live Session cache, history, a Node
toolbar and live events above the prompt."""

from ._app import ConsoleOptions as ConsoleOptions
from ._app import console_main as console_main
from ._app import run_console as run_console
from ._approvals import ApprovalCache as ApprovalCache
from ._approvals import PendingApproval as PendingApproval
from ._cache import CachedSession as CachedSession
from ._cache import FeedEvent as FeedEvent
from ._cache import SessionCache as SessionCache
from ._completer import ConsoleCompleter as ConsoleCompleter
from ._feed import EventFeed as EventFeed
from ._feed import StreamFeed as StreamFeed
from ._routines import CachedRoutine as CachedRoutine
from ._routines import RoutineCache as RoutineCache
from ._seam import CliSeam as CliSeam
from ._seam import CommandSeam as CommandSeam
