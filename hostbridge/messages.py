"""hostbridge's whole public protocol. Every tag starts with `hostbridge.`.

Besides these the actor answers the kernel's `kernel.health.request`.
"""

from __future__ import annotations

from typing import Any, Literal

from lineup.actors.kernel import Message
from lineup.actors.kernel.control import HealthReply, HealthRequest

__all__ = [
    "AppsUpdatedEvent",
    "HealthReply",
    "HealthRequest",
    "RuntimeStateEvent",
    "ViewUpdatedEvent",
]


class ViewUpdatedEvent(Message):
    """focus → hostbridge: an instance's new view; pushed to every connected Shell."""

    type: Literal["hostbridge.view.updated"] = "hostbridge.view.updated"
    app_scope: str
    instance_id: str
    view: dict[str, Any]


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
