"""The app's Surfaces as focus keeps them (`Surfaces`): opened from its entrypoints, patched,
closed once."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.facts.views import SURFACE_PREFIX, SURFACE_VIEW_KIND, surface_id_of

from .. import protocol as p
from ..manifest import SURFACE_KIND, SURFACE_VERSIONS

__all__ = ["FakeSurface", "FakeSurfaces", "compact"]


@dataclass
class FakeSurface:
    """One instance's Surface as focus keeps it; `view` is what the Shell would mount."""

    instance_id: str
    entrypoint: str
    surface_version: int
    events: tuple[str, ...]
    state: dict[str, Any]
    state_revision: int = 0
    tool_input: dict[str, Any] | None = None
    tool_result: dict[str, Any] | None = None
    open: bool = True

    @property
    def surface_id(self) -> str:
        return surface_id_of(self.instance_id)

    @property
    def view(self) -> dict[str, Any]:
        view: dict[str, Any] = {
            "kind": SURFACE_VIEW_KIND,
            "surface_id": self.surface_id,
            "entrypoint": self.entrypoint,
            "surface_version": self.surface_version,
            "state": self.state,
            "state_revision": self.state_revision,
        }
        if self.tool_input is not None:
            view["tool_input"] = self.tool_input
        if self.tool_result is not None:
            view["tool_result"] = self.tool_result
        return view

    def reply(self, *, changed: bool = True) -> p.SurfaceReply:
        return p.SurfaceReply(
            surface_id=self.surface_id,
            instance_id=self.instance_id,
            entrypoint=self.entrypoint,
            state_revision=self.state_revision,
            open=self.open,
            changed=changed,
        )


@dataclass
class FakeSurfaces:
    """The app's Surfaces by instance (open, or closed until the instance ends), as focus
    keeps them: opened from the app's `surface` entrypoints (`app_info.entrypoints`), patched
    by RFC 7396, closed once. `untold` holds the ends the app hears of at the next `settle`;
    a test plays the Surface with `FakeRuntime.send_surface_event` and, for its session data
    writes, `FakeRuntime.session_data.put`."""

    by_instance: dict[str, FakeSurface] = field(default_factory=dict)
    updates: list[p.SurfaceUpdateRequest] = field(default_factory=list)
    untold: list[p.SurfaceClosedEvent] = field(default_factory=list)

    def of(self, instance_id: str) -> FakeSurface | None:
        """The instance's open Surface, if any."""
        surface = self.by_instance.get(instance_id)
        return surface if surface is not None and surface.open else None

    def _open(self, msg: p.SurfaceOpenRequest, entrypoints: tuple[Any, ...]) -> p.SurfaceReply:
        held = self.by_instance.get(msg.instance_id)
        if held is not None and held.open:
            return held.reply(changed=False)
        chosen = next(
            (
                e
                for e in entrypoints
                if e.kind == SURFACE_KIND and (msg.entrypoint is None or e.id == msg.entrypoint)
            ),
            None,
        )
        if chosen is None or chosen.surface_version not in SURFACE_VERSIONS:
            raise LineUpError(ErrorCode.SURFACE_UNAVAILABLE, msg.entrypoint or "")
        _bounded_surface(msg.state)
        if msg.tool_input is not None:
            _bounded_surface(msg.tool_input)
        surface = self.by_instance[msg.instance_id] = FakeSurface(
            instance_id=msg.instance_id,
            entrypoint=chosen.id,
            surface_version=chosen.surface_version,
            events=tuple(chosen.events),
            state=msg.state,
            state_revision=0 if held is None else held.state_revision + 1,
            tool_input=msg.tool_input,
        )
        return surface.reply()

    def _owned(self, surface_id: str) -> FakeSurface:
        surface = self.by_instance.get(surface_id.removeprefix(SURFACE_PREFIX))
        if surface is None or not surface_id.startswith(SURFACE_PREFIX):
            raise LineUpError(ErrorCode.SURFACE_NOT_FOUND, surface_id)
        return surface

    def _update(self, msg: p.SurfaceUpdateRequest) -> p.SurfaceReply:
        surface = self._owned(msg.surface_id)
        if not surface.open:
            raise LineUpError(ErrorCode.SURFACE_NOT_FOUND, msg.surface_id)
        state = p.merge_patch(surface.state, msg.patch)
        _bounded_surface(state)
        if msg.tool_result is not None:
            _bounded_surface(msg.tool_result)
            surface.tool_result = msg.tool_result
        surface.state = state
        surface.state_revision += 1
        self.updates.append(msg)
        return surface.reply()

    def _close(self, msg: p.SurfaceCloseRequest) -> p.SurfaceReply:
        surface = self._owned(msg.surface_id)
        if not surface.open:
            return surface.reply(changed=False)
        surface.open = False
        self.untold.append(
            p.SurfaceClosedEvent(
                instance_id=surface.instance_id, surface_id=surface.surface_id, reason="closed"
            )
        )
        return surface.reply()

    def _ended(self, instance_id: str) -> None:
        surface = self.by_instance.pop(instance_id, None)
        if surface is not None and surface.open:
            self.untold.append(
                p.SurfaceClosedEvent(
                    instance_id=instance_id, surface_id=surface.surface_id, reason="instance_ended"
                )
            )


def compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _bounded_surface(document: dict[str, Any]) -> None:
    if len(compact(document).encode()) > p.MAX_SURFACE_STATE_BYTES:
        raise LineUpError(ErrorCode.ENVELOPE_TOO_LARGE, "surface document bytes")
