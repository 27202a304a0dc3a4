"""`turn.show`'s answer under the 1 MiB frame: built in `actors.session` (`_items_page`),
whose actor also publishes an ended turn's first page with its snapshot."""

from actors.session._items_page import ITEM_OVERHEAD_BYTES as ITEM_OVERHEAD_BYTES
from actors.session._items_page import MAX_ITEMS as MAX_ITEMS
from actors.session._items_page import OUTPUT_BUDGET_BYTES as OUTPUT_BUDGET_BYTES
from actors.session._items_page import RESPONSE_BUDGET_BYTES as RESPONSE_BUDGET_BYTES
from actors.session._items_page import _bounded_turn as _bounded_turn
from actors.session._items_page import _fit as _fit
from actors.session._items_page import encoded_size as encoded_size
from actors.session._items_page import items_page as items_page
from actors.session._items_page import show_page as show_page
