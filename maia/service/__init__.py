"""The Node's handlers for Projects, Sessions, turns, references, receipts and events.

`open_services(...)` runs what they need (the Session runtime); `register(table, context_of)`
installs them into the Node's dispatcher. Each handler is also a plain function
`(ServiceContext, params) -> output` for direct use. The names of the kinds opened on demand
(machines, routines: `_kinds`) load on first use, so a Node without them never imports them.
"""

from typing import TYPE_CHECKING

from maia._lazy import lazy_exports

from ._admitted import AdmittedConfigs as AdmittedConfigs
from ._admitted import files_fingerprint as files_fingerprint
from ._admitted import project_of as project_of
from ._admitted import read_effective as read_effective
from ._admitted import user_of as user_of
from ._config_status import admitted_user_config as admitted_user_config
from ._config_status import config_files_status as config_files_status
from ._config_status import effective_config as effective_config
from ._context import ServiceContext as ServiceContext
from ._context import project_of_session as project_of_session
from ._event_types import check_filter_types as check_filter_types
from ._event_types import check_webhook_types as check_webhook_types
from ._event_types import journal_event_types as journal_event_types
from ._kinds import KINDS as KINDS
from ._kinds import ON_DEMAND as ON_DEMAND
from ._kinds import OnDemand as OnDemand
from ._kinds import after_open as after_open
from ._kinds import is_open as is_open
from ._kinds import kind_event_types as kind_event_types
from ._kinds import running_kind as running_kind
from ._page_bytes import approval_bytes as approval_bytes
from ._page_bytes import event_bytes as event_bytes
from ._page_bytes import fitting as fitting
from ._page_bytes import receipt_bytes as receipt_bytes
from ._page_bytes import session_bytes as session_bytes
from ._page_bytes import webhook_bytes as webhook_bytes
from ._refusal_details import completed_refusal as completed_refusal
from ._register import HANDLERS as HANDLERS
from ._register import open_services as open_services
from ._register import register as register
from ._sessions import session_executor as session_executor
from ._turn_items import encoded_size as encoded_size
from ._turn_items import items_page as items_page
from ._turn_items import show_page as show_page

if TYPE_CHECKING:
    from ._machines import MACHINE_HANDLERS as MACHINE_HANDLERS
    from ._machines_placement import create_placed as create_placed
    from ._machines_views import machine_wire as machine_wire
    from ._routine_gate import SchedulerGate as SchedulerGate
    from ._routine_gate import authorize as authorize
    from ._routines import ROUTINE_HANDLERS as ROUTINE_HANDLERS
    from ._routines import install_launcher as install_launcher

_LAZY = {
    "MACHINE_HANDLERS": "._machines", "create_placed": "._machines_placement",
    "machine_wire": "._machines_views", "SchedulerGate": "._routine_gate",
    "authorize": "._routine_gate", "ROUTINE_HANDLERS": "._routines",
    "install_launcher": "._routines",
}  # fmt: skip
__getattr__, _ = lazy_exports(__name__, _LAZY, globals())
