"""The handler tests' fixtures, shared with tests/maia/service (real storage, a fake clock)."""

from ..maia.service.test_routines import clock as clock
from ..maia.service.test_routines import rctx as rctx
