"""Surfaces. A Surface is an instance's UI in a sandboxed iframe of the Shell (seed 003 §3.5,
§5.3): the app's own web assets, declared by a `surface` entrypoint of its manifest. The runtime
decides whether one opens, names it (`surface_id`), and carries everything between it and the
app: the app sends the Surface its `state` (JSON merge patches, RFC 7396); the Surface sends the
app the events its entrypoint declares. One Surface per instance at most.

The app opens, updates and closes one (`Surfaces`); its events and its end come to the app.
"""

from typing import Annotated, Any, Literal

from pydantic import Field

from lineup.actors.kernel import Message

from .common import Id

__all__ = [
    "MAX_SURFACE_EVENT_BYTES",
    "MAX_SURFACE_STATE_BYTES",
    "SurfaceCloseRequest",
    "SurfaceClosedEvent",
    "SurfaceEvent",
    "SurfaceOpenRequest",
    "SurfaceReply",
    "SurfaceUpdateRequest",
    "merge_patch",
]

MAX_SURFACE_STATE_BYTES = 64 * 1024  # the Surface's state, as compact UTF-8 JSON
MAX_SURFACE_EVENT_BYTES = 64 * 1024  # one event's `data`, likewise


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7396, as the runtime applies a `SurfaceUpdateRequest`'s patch: `patch` applied to
    `target` (neither is changed; the result is new)."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


class SurfaceOpenRequest(Message):
    """Open the instance's Surface (or get the one already open: idempotent). `entrypoint` is a
    `surface` entrypoint's id (None: the manifest's first). `state` is what the Surface is shown
    first; `tool_input` what its `ui/notifications/tool-input` carries. Refused with
    `surface_unavailable` (no such entrypoint, or its `surface_version` is not one this host
    runs), `app_instance_not_found` (not a live instance of the sender's),
    `envelope_too_large` (state over `MAX_SURFACE_STATE_BYTES`)."""

    type: Literal["focus.sdk.surface.open"] = "focus.sdk.surface.open"
    instance_id: Id
    entrypoint: Annotated[str, Field(min_length=1, max_length=128)] | None = None
    state: dict[str, Any] = Field(default_factory=dict)
    tool_input: dict[str, Any] | None = None


class SurfaceUpdateRequest(Message):
    """Merge `patch` (RFC 7396) into the Surface's state; the Surface gets the new state as
    `lineup/notifications/state` with its revision. `tool_result`, if set, reaches it as
    `ui/notifications/tool-result`. Refused with `surface_not_found`, `envelope_too_large`."""

    type: Literal["focus.sdk.surface.update"] = "focus.sdk.surface.update"
    surface_id: Id
    patch: dict[str, Any] = Field(default_factory=dict)
    tool_result: dict[str, Any] | None = None


class SurfaceCloseRequest(Message):
    """Close the Surface (the Shell tears it down: `ui/resource-teardown`). A repeat is a
    receipt with `changed` False. Refused with `surface_not_found` for another app's."""

    type: Literal["focus.sdk.surface.close"] = "focus.sdk.surface.close"
    surface_id: Id


class SurfaceReply(Message):
    type: Literal["focus.sdk.surface.reply"] = "focus.sdk.surface.reply"
    surface_id: Id
    instance_id: Id
    entrypoint: str
    state_revision: int = Field(ge=0)
    open: bool = True
    changed: bool = True


class SurfaceEvent(Message):
    """Runtime → app: the Surface sent one of its entrypoint's declared events (`name`), its
    `data` checked for size by the Shell, the hostbridge and focus."""

    type: Literal["miniapp.surface.event"] = "miniapp.surface.event"
    instance_id: Id
    surface_id: Id
    name: Annotated[str, Field(min_length=1, max_length=128)]
    data: dict[str, Any] = Field(default_factory=dict)


class SurfaceClosedEvent(Message):
    """Runtime → app: the Surface is gone (`reason`: `closed` by the app, `instance_ended`)."""

    type: Literal["miniapp.surface.closed"] = "miniapp.surface.closed"
    instance_id: Id
    surface_id: Id
    reason: Literal["closed", "instance_ended"]
