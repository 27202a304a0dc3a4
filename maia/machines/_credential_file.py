"""The Execution Node's machine credential: `<home>/machine.json`, written 0600 atomically.

It holds what the Control Node gave at enrollment (machine ID, name, credential,
registration incarnation, the revision the credential was issued at, the Control Node's ID
and URL, and for wss:// the fingerprint of its certificate) and the highest revocation
revision this Node has observed since. Restoring an Execution Node from a backup is
administrator recovery (docs/machines.md): delete this file and enroll afresh.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import attrs
import orjson

from maia.core import check, field, id_field, to_json
from maia.node import write_private_file

FILE_NAME: Final = "machine.json"


@attrs.frozen
class MachineCredential:
    """What `machine.json` holds (wire keys camelCase, unknown keys refused)."""

    control_url: str = field(doc="ws:// or wss:// address of the Control Node.", max_length=512)
    control_node_id: str = id_field("The Control Node.")
    machine_id: str = id_field("This machine on the Control Node.")
    name: str = field(doc="Its name there.", max_length=64)
    credential: str = field(doc="The machine credential.", min_length=1, max_length=256)
    incarnation: int = field(doc="The registration incarnation.", minimum=1)
    credential_revision: int = field(doc="The revision it was issued at.", minimum=0)
    observed_revocation_revision: int = field(doc="The highest revision seen.", minimum=0)
    control_fingerprint: str | None = field(
        doc="sha256 of the Control Node's certificate (wss://), pinned at enrollment.",
        default=None, nullable=True, pattern="^[0-9a-f]{64}$",
    )  # fmt: skip


def credential_path(home: Path) -> Path:
    return home / FILE_NAME


def read_credential(home: Path) -> MachineCredential | None:
    """The stored credential, or None when there is none. Raises `validation_failed` for a
    file that is not one (a person edited it: the message names the field)."""
    path = credential_path(home)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    return check(MachineCredential, orjson.loads(data), root=FILE_NAME)


def write_credential(home: Path, credential: MachineCredential) -> None:
    write_private_file(credential_path(home), orjson.dumps(to_json(credential)))
