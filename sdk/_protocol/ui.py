"""An instance's view for the Shell's trusted components: the whole view, the items of its
list, the runtime's call to send it again, and the user's actions on it (`Ui`)."""

from typing import Any, Literal

from pydantic import Field

from lineup.actors.kernel import Message

from .common import Id

__all__ = [
    "MAX_ITEM_ORDER",
    "MAX_VIEW_BYTES",
    "MAX_VIEW_ITEMS",
    "MAX_VIEW_ITEMS_PUT_BYTES",
    "MAX_VIEW_ITEM_BYTES",
    "UI_APP_OPENED",
    "UI_CLOSE_REQUESTED",
    "UiEvent",
    "ViewItem",
    "ViewItemsPutRequest",
    "ViewRefreshEvent",
    "ViewUpdateRequest",
]

# A view is small and replaced whole; what grows (a timeline's messages) travels as items, each
# on its own, so no frame on the way to the Shell grows with their number.
MAX_VIEW_BYTES = 64 * 1024  # a view document, compact UTF-8 JSON
# One item: a wire message's text (the wire's 256 KiB envelope limit) and the fields around it.
MAX_VIEW_ITEM_BYTES = 256 * 1024 + 8 * 1024
MAX_VIEW_ITEMS_PUT_BYTES = 384 * 1024  # the items of one put: well inside a MiniApp's frame
MAX_VIEW_ITEMS = 256  # items focus keeps per instance (the newest by order)
MAX_ITEM_ORDER = 2**53 - 1  # an order a JavaScript Shell reads back exactly


class ViewUpdateRequest(Message):
    """The app's whole view state for the Shell's trusted components (replace, never merge).
    Bounded: at most `MAX_VIEW_BYTES` (focus refuses a larger one, `invalid_arguments`)."""

    type: Literal["focus.sdk.view.update"] = "focus.sdk.view.update"
    instance_id: Id
    view: dict[str, Any]


class ViewItem(Message):
    """One entry of an instance's item list (a chat message): kept by id, shown by `order`
    (then id), replaced whole when put again. `fields` is what the trusted component shows."""

    type: Literal["focus.view.item"] = "focus.view.item"
    id: Id
    order: int = Field(ge=0, le=MAX_ITEM_ORDER)
    fields: dict[str, Any]
    # The runtime's stamp of this version (focus sets it; an app's is ignored): a Shell keeps
    # the version with the highest, whatever order versions reach it in.
    rev: int = Field(default=0, ge=0, le=MAX_ITEM_ORDER)


class ViewItemsPutRequest(Message):
    """Add or replace items of the instance's list (only an app trusted with a component
    that shows items may). At most `MAX_VIEW_ITEMS_PUT_BYTES` in all; `Ui.put_items` splits."""

    type: Literal["focus.sdk.view.items.put"] = "focus.sdk.view.items.put"
    instance_id: Id
    items: tuple[ViewItem, ...] = Field(min_length=1, max_length=MAX_VIEW_ITEMS)


class ViewRefreshEvent(Message):
    """Runtime → app: send your whole view again, from what the runtime holds now (its side
    lost its copy, or the conversation your history was read from changed)."""

    type: Literal["miniapp.view.refresh"] = "miniapp.view.refresh"


class UiEvent(Message):
    """Shell → app, through hostbridge and focus: a user action on the app's view."""

    type: Literal["miniapp.ui.event"] = "miniapp.ui.event"
    instance_id: Id
    event: dict[str, Any]


# The `UiEvent` focus sends an app for an instance the user opened from the Shell (a deep link
# `#open=<app_scope>`, or the default app at start), and for an instance resumed after it was
# suspended (its process may be new, after a restart of the runtime): `{"kind": "app.opened"}`.
# No tool call may come for that instance, so the app shows what it offers without one (or
# nothing), from the instance's session data. It may come again for the same instance.
UI_APP_OPENED = "app.opened"

# The `UiEvent` focus sends, instead of closing, when the user closes in the Shell an instance of
# an app that declares `CLOSE_REQUESTS_FEATURE` (lineup.sdk.manifest) and whose process runs:
# `{"kind": "app.close_requested"}`. The app decides: it closes the instance itself
# (`lifecycle.request_close`), at once or after asking the user (a standard `confirm`), or keeps
# it open. Only the user's close from the Shell is asked this way; an app's own close, a
# disable, a failure or a suspended instance's close happen at once.
UI_CLOSE_REQUESTED = "app.close_requested"
