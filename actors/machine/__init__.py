"""Machines (issue 16): Execution Nodes enrolled on this Control Node and their links.

`_sql` holds the machines table, `_secrets` the one-time tokens and credentials,
`_enrollment` enrollment, revocation and authentication as writes (judged by the MN0
registration rules of `supervision.leases`), `_links` the run's live links and `_kind` the
kind the runtime opens (`MACHINES`). See docs/machines.md.
"""

from ._enrollment import OWNER_TYPE as OWNER_TYPE
from ._enrollment import TOKEN_TTL_MS as TOKEN_TTL_MS
from ._enrollment import Credential as Credential
from ._enrollment import authenticate_write as authenticate_write
from ._enrollment import enroll_write as enroll_write
from ._enrollment import judge_enroll as judge_enroll
from ._enrollment import judge_revoke as judge_revoke
from ._enrollment import redeem_write as redeem_write
from ._enrollment import refused as refused
from ._enrollment import revoke_write as revoke_write
from ._enrollment import token_of as token_of
from ._kind import MACHINES as MACHINES
from ._kind import MachineKind as MachineKind
from ._kind import MachineService as MachineService
from ._links import LinkBoard as LinkBoard
from ._links import LinkState as LinkState
from ._secrets import MAX_SECRET_LENGTH as MAX_SECRET_LENGTH
from ._secrets import credential_machine as credential_machine
from ._secrets import parse_token as parse_token
from ._sql import MAX_MACHINES as MAX_MACHINES
from ._sql import MachineRecord as MachineRecord
from ._sql import MachineState as MachineState
from ._sql import get_machine as get_machine
from ._sql import list_machines as list_machines
from ._sql import touch_machine as touch_machine
