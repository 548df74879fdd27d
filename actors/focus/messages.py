"""The focus actor's whole public protocol. Every tag starts with `focus.`.

`focus.ui.*` comes from the hostbridge (the user); `focus.sdk.*` (from MiniApps) is declared in
`lineup.sdk.protocol`. Besides these focus answers the kernel's `kernel.health.request`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from lineup.actors.kernel import Message
from lineup.actors.kernel.control import HealthReply, HealthRequest

__all__ = [
    "AppView",
    "HealthReply",
    "HealthRequest",
    "UiEventAccepted",
    "UiEventRequest",
    "ViewsReply",
    "ViewsRequest",
]


class AppView(Message):
    type: Literal["focus.view"] = "focus.view"
    app_scope: str
    instance_id: str
    view: dict[str, Any]


class ViewsRequest(Message):
    """The latest view of every live instance (the Shell (re)connected)."""

    type: Literal["focus.ui.views.get"] = "focus.ui.views.get"


class ViewsReply(Message):
    type: Literal["focus.ui.views.get.reply"] = "focus.ui.views.get.reply"
    views: tuple[AppView, ...]


class UiEventRequest(Message):
    """A user action on an instance's view, from the Shell (sender kind: user)."""

    type: Literal["focus.ui.event"] = "focus.ui.event"
    instance_id: str = Field(min_length=1, max_length=200)
    event: dict[str, Any]


class UiEventAccepted(Message):
    type: Literal["focus.ui.event.reply"] = "focus.ui.event.reply"
    instance_id: str
