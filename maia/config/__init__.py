"""Configuration files of a Maia home: the strict JSONC reader and the typed documents
(UserConfigV1 with Maia's executors, the Project inventory mirror)."""

from ._jsonc import MAX_DEPTH as MAX_DEPTH
from ._jsonc import JsoncError as JsoncError
from ._jsonc import loads_jsonc as loads_jsonc
from ._projects import InventoryEntry as InventoryEntry
from ._projects import ProjectRoot as ProjectRoot
from ._projects import canonical_root as canonical_root
from ._projects import default_project_key as default_project_key
from ._projects import render_inventory as render_inventory
from ._projects import write_inventory as write_inventory
from ._user import BUILTIN_EXECUTORS as BUILTIN_EXECUTORS
from ._user import CapacityLimits as CapacityLimits
from ._user import ExecutorConfig as ExecutorConfig
from ._user import SessionSettings as SessionSettings
from ._user import UserConfig as UserConfig
from ._user import WebhookSettings as WebhookSettings
from ._user import load_user_config as load_user_config
from ._user import parse_user_config as parse_user_config
