"""hostbridge's whole public protocol. Every tag starts with `hostbridge.`.

Besides these the actor answers the kernel's `kernel.health.request`.
"""

from __future__ import annotations

from typing import Any, Literal

from lineup.actors.kernel import Message
from lineup.actors.kernel.control import HealthReply, HealthRequest
from lineup.sdk.protocol import ViewItem

__all__ = [
    "AppsUpdatedEvent",
    "HealthReply",
    "HealthRequest",
    "RuntimeStateEvent",
    "ViewItemsUpdatedEvent",
    "ViewUpdatedEvent",
]


class ViewUpdatedEvent(Message):
    """focus → hostbridge: an instance's new view; pushed to every connected Shell."""

    type: Literal["hostbridge.view.updated"] = "hostbridge.view.updated"
    app_scope: str
    instance_id: str
    view: dict[str, Any]


class ViewItemsUpdatedEvent(Message):
    """focus → hostbridge: items of an instance that are new or changed (a bounded batch);
    each goes to every connected Shell as its own frame."""

    type: Literal["hostbridge.view.items.updated"] = "hostbridge.view.items.updated"
    app_scope: str
    instance_id: str
    items: tuple[ViewItem, ...]


class RuntimeStateEvent(Message):
    """transport → hostbridge: the runtime's lifecycle state changed (DESIGN §5)."""

    type: Literal["hostbridge.runtime.state"] = "hostbridge.runtime.state"
    state: str
    reason: str | None = None  # an appserver_* code while reconnecting / offline_degraded


class AppsUpdatedEvent(Message):
    """focus → hostbridge: the live instances, in stack order, and which one is in front."""

    type: Literal["hostbridge.apps.updated"] = "hostbridge.apps.updated"
    foreground: str
    instances: tuple[dict[str, Any], ...]
