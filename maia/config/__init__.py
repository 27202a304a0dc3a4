"""Configuration files of a Maia home: the strict JSONC reader and the typed documents."""

from ._jsonc import MAX_DEPTH as MAX_DEPTH
from ._jsonc import JsoncError as JsoncError
from ._jsonc import loads_jsonc as loads_jsonc
