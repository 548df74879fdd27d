"""Which instance has a Surface open, and what it shows: focus's bookkeeping, no I/O.

Theory of operation
-------------------
A Surface is an instance's UI in a sandboxed iframe of the Shell (seed 003 §3.5). An instance
has one at most, named by the runtime after it (`surface_id_of`: the same after a restart of
focus). It opens from a `surface` entrypoint of the app's manifest whose `surface_version` this
host runs, else `surface_unavailable`. While it is open, the instance's view is the one this
book makes (`Surface.view`, kind `lineup.surface`): the app changes the Surface's `state` only
by RFC 7396 merge patches, each one revision on, and never draws a view of that kind itself.

The states of one instance's Surface, and what moves it (anything else is refused):

    none   --open-->   open     (a new Surface: revision 0, or the closed one's + 1)
    open   --open-->   open     (the same Surface: changed False, its state kept)
    open   --update--> open     (revision + 1)
    open   --close-->  closed   (the app is told `closed`)
    closed --close-->  closed   (changed False)
    closed --open-->   open
    *      --drop-->   none     (the instance ended: the app is told `instance_ended`)

A call of a tool linked to the Surface (`ToolDescriptor.ui`) is the runtime's to show, not the
app's (issue 30): `show_call` opens the instance's Surface if it is not open (or takes the open
one) with the call's arguments as its tool input and the call as its `tool_info`; `end_call`
gives it that call's outcome, once: a CallToolResult (`call_result`) or the code it was
cancelled with (`call_cancelled`). An outcome of a call the Surface no longer shows (a newer
call, or the Surface closed) changes nothing.

Every lookup by `surface_id` checks the owner too: another app's Surface is `surface_not_found`,
exactly as one that does not exist.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Final

from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.facts.views import SURFACE_PREFIX, surface_id_of
from lineup.facts.views import SURFACE_VIEW_KIND as VIEW_KIND
from lineup.sdk import protocol as sdk
from lineup.sdk.manifest import SURFACE_KIND, SURFACE_VERSIONS, Entrypoint, Manifest
from lineup.sdk.mcp_apps import ui_meta
from lineup.sdk.mcp_grants import FRAME_FEATURES, declares_network
from lineup.sdk.protocol import merge_patch
from lineup.wire._limits import WireLimitError, check_document, encoded_size

__all__ = [
    "PLACEHOLDER_VIEW",
    "SURFACE_PREFIX",
    "VIEW_KIND",
    "Surface",
    "SurfaceBook",
    "merge_patch",
    "surface_id_of",
]

# What an instance whose Surface closed shows when its app never drew a view of its own: a
# kind no component draws, so the Shell keeps its placeholder.
PLACEHOLDER_VIEW: Final[dict[str, Any]] = {"kind": "lineup.placeholder"}


def check_bounded(document: dict[str, Any]) -> None:
    """A Surface's state, tool input or tool result: the wire's document bounds and at most
    `MAX_SURFACE_STATE_BYTES`. Raises `LineUpError` with the bound's code."""
    try:
        check_document(document)
    except WireLimitError as exc:
        raise LineUpError(exc.code, "surface document bounds") from exc
    if encoded_size(document) > sdk.MAX_SURFACE_STATE_BYTES:
        raise LineUpError(ErrorCode.ENVELOPE_TOO_LARGE, "surface document bytes")


@dataclass(frozen=True)
class Surface:
    instance_id: str
    app_scope: str
    entrypoint: Entrypoint
    label: str
    state: dict[str, Any]
    state_revision: int = 0
    tool_input: dict[str, Any] | None = None
    tool_result: dict[str, Any] | None = None
    tool_info: dict[str, Any] | None = None  # the runtime's call it shows (`show_call`)
    call_result: dict[str, Any] | None = None  # that call's CallToolResult
    call_cancelled: str | None = None  # or the code it was cancelled with

    @property
    def surface_id(self) -> str:
        return surface_id_of(self.instance_id)

    def view(self) -> dict[str, Any]:
        """The instance's view while the Surface is open (what the Shell mounts)."""
        view: dict[str, Any] = {
            "kind": VIEW_KIND,
            "surface_id": self.surface_id,
            "entrypoint": self.entrypoint.id,
            "surface_version": self.entrypoint.surface_version,
            "label": self.label,
            "state": self.state,
            "state_revision": self.state_revision,
        }
        ui = self.entrypoint.mcp_app
        if ui is not None and (declares_network(ui) or ui.permissions):
            # What the Shell asks the user before it frames the page (issue 30): the grants
            # are the gateway's, the CSP the hostbridge's; these are only the questions.
            # `csp`: the declared origins in the spec's spelling, which the Shell reports back
            # to the page as approved (`hostCapabilities.sandbox`) only once they are granted.
            view["mcp_access"] = {
                "network": declares_network(ui),
                "devices": [FRAME_FEATURES[p] for p in ui.permissions],
                "csp": ui_meta(ui).get("csp", {}),
            }
        if self.tool_input is not None:
            view["tool_input"] = self.tool_input
        if self.tool_result is not None:
            view["tool_result"] = self.tool_result
        for key in ("tool_info", "call_result", "call_cancelled"):
            if getattr(self, key) is not None:
                view[key] = getattr(self, key)
        return view

    def reply(self, *, open: bool = True, changed: bool = True) -> sdk.SurfaceReply:
        return sdk.SurfaceReply(
            surface_id=self.surface_id,
            instance_id=self.instance_id,
            entrypoint=self.entrypoint.id,
            state_revision=self.state_revision,
            open=open,
            changed=changed,
        )

    def check_event(self, name: str, data: dict[str, Any]) -> None:
        """An event from the Surface: one its entrypoint declares (`bridge_method_unknown`),
        its data within `MAX_SURFACE_EVENT_BYTES` (`bridge_message_too_large`)."""
        if name not in self.entrypoint.events:
            raise LineUpError(ErrorCode.BRIDGE_METHOD_UNKNOWN, "event not declared")
        try:
            check_document(data)
        except WireLimitError as exc:
            raise LineUpError(ErrorCode.BRIDGE_MESSAGE_TOO_LARGE, "event bounds") from exc
        if encoded_size(data) > sdk.MAX_SURFACE_EVENT_BYTES:
            raise LineUpError(ErrorCode.BRIDGE_MESSAGE_TOO_LARGE, "event bytes")


def surface_entrypoint(manifest: Manifest | None, entrypoint: str | None) -> Entrypoint:
    """The manifest's `surface` entrypoint named `entrypoint` (None: its first) whose version
    this host runs. Raises `surface_unavailable`."""
    surfaces = (
        [] if manifest is None else [e for e in manifest.entrypoints if e.kind == SURFACE_KIND]
    )
    chosen = next((e for e in surfaces if entrypoint is None or e.id == entrypoint), None)
    if chosen is None or chosen.surface_version not in SURFACE_VERSIONS:
        raise LineUpError(ErrorCode.SURFACE_UNAVAILABLE, "no surface entrypoint this host runs")
    return chosen


class SurfaceBook:
    """The open (and the closed, until their instance ends) Surfaces, by instance."""

    def __init__(self) -> None:
        self._open: dict[str, Surface] = {}
        self._closed: dict[str, Surface] = {}

    def open(
        self,
        app_scope: str,
        instance_id: str,
        entrypoint: Entrypoint,
        *,
        label: str,
        state: dict[str, Any],
        tool_input: dict[str, Any] | None,
    ) -> tuple[Surface, bool]:
        """Open the instance's Surface; `(surface, changed)`: an open one is returned as it is
        (`changed` False). Raises `envelope_too_large` (or another bound's code)."""
        held = self._open.get(instance_id)
        if held is not None and held.app_scope == app_scope:
            return held, False
        check_bounded(state)
        if tool_input is not None:
            check_bounded(tool_input)
        before = self._closed.pop(instance_id, None)
        revision = (
            0 if before is None or before.app_scope != app_scope else before.state_revision + 1
        )
        surface = self._open[instance_id] = Surface(
            instance_id=instance_id,
            app_scope=app_scope,
            entrypoint=entrypoint,
            label=label,
            state=state,
            state_revision=revision,
            tool_input=tool_input,
        )
        return surface, True

    def update(
        self,
        app_scope: str,
        surface_id: str,
        patch: dict[str, Any],
        tool_result: dict[str, Any] | None,
    ) -> Surface:
        """Merge `patch` into the open Surface's state, one revision on. Raises
        `surface_not_found`, or a bound's code (nothing changes)."""
        surface = self.owned(app_scope, surface_id)
        state = merge_patch(surface.state, patch)
        check_bounded(state)
        if tool_result is not None:
            check_bounded(tool_result)
        surface = self._open[surface.instance_id] = replace(
            surface,
            state=state,
            state_revision=surface.state_revision + 1,
            tool_result=tool_result if tool_result is not None else surface.tool_result,
        )
        return surface

    def show_call(
        self,
        app_scope: str,
        instance_id: str,
        entrypoint: Entrypoint,
        *,
        label: str,
        tool_input: dict[str, Any],
        tool_info: dict[str, Any],
    ) -> tuple[Surface, bool]:
        """The runtime shows a call on the instance's Surface, opening it (state `{}`) if it
        is not open; `(surface, opened)`. The open one shows the new call (its outcome
        cleared; its state, and so its revision, as they were). Raises a bound's code
        (nothing changes)."""
        check_bounded(tool_input)
        held = self._open.get(instance_id)
        if held is not None and held.app_scope == app_scope:
            surface = self._open[instance_id] = replace(
                held,
                tool_input=tool_input,
                tool_result=None,
                tool_info=tool_info,
                call_result=None,
                call_cancelled=None,
            )
            return surface, False
        surface, _ = self.open(
            app_scope, instance_id, entrypoint, label=label, state={}, tool_input=tool_input
        )
        surface = self._open[instance_id] = replace(surface, tool_info=tool_info)
        return surface, True

    def end_call(
        self,
        instance_id: str,
        call_id: str,
        *,
        result: dict[str, Any] | None = None,
        cancelled: str | None = None,
    ) -> Surface | None:
        """Give the call the Surface shows its outcome (a CallToolResult, or the code it was
        cancelled with); None (nothing changes) when the instance's open
        Surface shows no such call, or already its outcome. Raises a bound's code."""
        surface = self._open.get(instance_id)
        if surface is None or surface.tool_info is None or surface.tool_info.get("id") != call_id:
            return None
        if surface.call_result is not None or surface.call_cancelled is not None:
            return None
        if result is not None:
            check_bounded(result)
        surface = self._open[instance_id] = replace(
            surface,
            call_result=result,
            call_cancelled=None if result is not None else cancelled,
        )
        return surface

    def close(self, app_scope: str, surface_id: str) -> tuple[Surface, bool]:
        """Close the Surface; `(surface, changed)`: a closed one again is `changed` False.
        Raises `surface_not_found` (none, or another app's)."""
        instance_id = _instance_of(surface_id)
        closed = self._closed.get(instance_id)
        if closed is not None and closed.app_scope == app_scope:
            return closed, False
        surface = self.owned(app_scope, surface_id)
        del self._open[instance_id]
        self._closed[instance_id] = surface
        return surface, True

    def owned(self, app_scope: str, surface_id: str) -> Surface:
        """The open Surface `surface_id` of `app_scope`'s. Raises `surface_not_found`."""
        surface = self._open.get(_instance_of(surface_id))
        if surface is None or surface.app_scope != app_scope:
            raise LineUpError(ErrorCode.SURFACE_NOT_FOUND, surface_id)
        return surface

    def of(self, instance_id: str) -> Surface | None:
        """The instance's open Surface, if any."""
        return self._open.get(instance_id)

    def named(self, instance_id: str, surface_id: str) -> Surface:
        """The instance's open Surface, if it is `surface_id`. Raises `surface_not_found`."""
        surface = self._open.get(instance_id)
        if surface is None or surface.surface_id != surface_id:
            raise LineUpError(ErrorCode.SURFACE_NOT_FOUND, surface_id)
        return surface

    def drop(self, instance_id: str) -> Surface | None:
        """Forget the instance's Surfaces (it ended); returns the one that was open."""
        self._closed.pop(instance_id, None)
        return self._open.pop(instance_id, None)


def _instance_of(surface_id: str) -> str:
    # Not one of the runtime's names: an instance id no Surface can have.
    return surface_id.removeprefix(SURFACE_PREFIX) if surface_id.startswith(SURFACE_PREFIX) else ""
