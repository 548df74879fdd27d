"""Focus's side of Surfaces (seed 003 §3.5): the app's `focus.sdk.surface.*` requests and the
hostbridge's `focus.ui.surface.*` ones, on the book `_surfaces` keeps.

Theory of operation
-------------------
The app opens, updates and closes its instances' Surfaces; while one is open, the instance's
view is the Surface's (`Surface.view`) and the view the app draws meanwhile is kept beneath,
shown again when the Surface closes (or a placeholder, if it drew none). The hostbridge asks
where an open Surface's files are, hands on the events the Surface sends (checked against its
entrypoint, then told to the app as `miniapp.surface.event`), and reads, writes or subscribes
to its instance's session data: on the app's own path (`_session_data`), under the same lock,
`stale_revision` alike. A hostbridge that subscribed is told of every write while the Surface
is open.

Every refusal is audited by its type and code (`focus.surface_refused`, rate-bounded per
sender: a Surface's messages are the user's iframe's, as many as it likes). The handlers stay
on the actor (`@handles`), which delegates here; the instances and the apps are read through
`Access`, what an instance shows is the views' (`ViewService`), the rest of the tree is reached
through the `Port`.
"""

from __future__ import annotations

import os
from pathlib import Path

from lineup.actors.kernel import Envelope, ErrorCode, LineUpError, app_scope_of
from lineup.sdk import protocol as sdk
from lineup.sdk.manifest import SURFACE_KIND
from lineup.sdk.mcp_apps import ui_meta

from ._access import Access
from ._port import NOTIFY_TIMEOUT, Port
from ._session_data import SessionData
from ._surfaces import Surface, SurfaceBook, surface_entrypoint
from ._view_service import ViewService
from .messages import (
    SurfaceAccepted,
    SurfaceAssetsReply,
    SurfaceAssetsRequest,
    SurfaceEventRequest,
    SurfaceResource,
    SurfaceSessionDataRequest,
)

__all__ = ["SurfaceService"]


class SurfaceService:
    """The Surfaces of one focus (see the module's docstring): `surfaces` is their book,
    `sessions` the instances' session data, `views` what the instances show."""

    def __init__(
        self,
        port: Port,
        access: Access,
        surfaces: SurfaceBook,
        sessions: SessionData,
        views: ViewService,
    ) -> None:
        self._port = port
        self._access = access
        self._book = access.book
        self._instances = access.instances
        self._surfaces = surfaces
        self._sessions = sessions
        self._views = views

    def refused(self, env: Envelope, subject: str, refused: LineUpError) -> LineUpError:
        return self._port.surface_refused(env, subject, refused)

    def _show_surface(self, surface: Surface) -> None:
        self._views.show(surface.app_scope, surface.instance_id, surface.view())

    # ------------------------------------------------------------------ the app's views

    def drop(self, scope: str, instance_id: str) -> None:
        """The instance ended: its Surface goes (the app is told `instance_ended`), with its
        session's subscribers."""
        self._sessions.forget((scope, instance_id))
        surface = self._surfaces.drop(instance_id)
        if surface is not None:
            closed = sdk.SurfaceClosedEvent(
                instance_id=instance_id, surface_id=surface.surface_id, reason="instance_ended"
            )
            self._port.soon(self._port.tell_app, scope, closed)

    # ------------------------------------------------------------------ the app's requests

    def open(self, msg: sdk.SurfaceOpenRequest, env: Envelope) -> sdk.SurfaceReply:
        """Open one of the sender's live instances' Surface from a `surface` entrypoint of its
        manifest (idempotent: the open one again, `changed` False, its state kept); its view
        becomes the Surface's. Refused `app_instance_not_found` (not the sender's live
        instance, another app's audited as well), `surface_unavailable`, a bound's code."""
        try:
            scope = self._access.live_owned(env, msg.instance_id)
        except LineUpError as refused:
            missing = LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, msg.instance_id)
            raise self.refused(env, msg.instance_id, missing) from refused
        try:
            entrypoint = surface_entrypoint(self._book.manifest(scope), msg.entrypoint)
            surface, changed = self._surfaces.open(
                scope,
                msg.instance_id,
                entrypoint,
                label=self._book.title(scope),
                state=msg.state,
                tool_input=msg.tool_input,
            )
        except LineUpError as refused:
            raise self.refused(env, msg.instance_id, refused) from refused
        if changed:
            self._show_surface(surface)
        return surface.reply(changed=changed)

    def update(self, msg: sdk.SurfaceUpdateRequest, env: Envelope) -> sdk.SurfaceReply:
        """Merge a patch into the sender's open Surface's state (one revision on) and show it.
        Refused `surface_not_found` (none open, or another app's), a bound's code."""
        try:
            surface = self._surfaces.update(
                app_scope_of(env.sender), msg.surface_id, msg.patch, msg.tool_result
            )
        except LineUpError as refused:
            raise self.refused(env, msg.surface_id, refused) from refused
        self._show_surface(surface)
        return surface.reply()

    def close(self, msg: sdk.SurfaceCloseRequest, env: Envelope) -> sdk.SurfaceReply:
        """Close the sender's Surface: the instance shows the view its app drew (or a
        placeholder), and the app is told (`closed`). A repeat is `changed` False."""
        scope = app_scope_of(env.sender)
        try:
            surface, changed = self._surfaces.close(scope, msg.surface_id)
        except LineUpError as refused:
            raise self.refused(env, msg.surface_id, refused) from refused
        if changed:
            self._sessions.unwatch((scope, surface.instance_id))
            if self._instances.live_scope(surface.instance_id) is not None:
                self._views.uncover(scope, surface.instance_id)
            closed = sdk.SurfaceClosedEvent(
                instance_id=surface.instance_id, surface_id=surface.surface_id, reason="closed"
            )
            self._port.soon(self._port.tell_app, scope, closed)
        return surface.reply(open=False, changed=changed)

    # ------------------------------------------------------------------ the hostbridge's

    def _open_surface(self, instance_id: str, surface_id: str | None) -> Surface:
        """The live instance's open Surface (that one, if `surface_id`), for the hostbridge.
        Raises `app_instance_not_found`, `surface_not_found`."""
        if self._instances.live_scope(instance_id) is None:
            raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, instance_id)
        surface = self._surfaces.of(instance_id)
        if surface is None:
            raise LineUpError(ErrorCode.SURFACE_NOT_FOUND, instance_id)
        if surface_id is not None:
            surface = self._surfaces.named(instance_id, surface_id)
        return surface

    def assets(self, msg: SurfaceAssetsRequest, env: Envelope) -> SurfaceAssetsReply:
        """Where an open Surface's files are: the `web/` folder beside its app's manifest, or
        an installed app's `web_root` (in its verified cache); and its app's resources, the
        MCP App UI documents its manifest declares (`lineup.sdk.mcp_apps`)."""
        try:
            surface = self._open_surface(msg.instance_id, None)
        except LineUpError as refused:
            raise self.refused(env, msg.instance_id, refused) from refused
        app = self._book.get(surface.app_scope)
        manifest, root = (app.manifest_file, app.web_root) if app is not None else ("", "")
        if not root and not manifest:
            # No folder of its own (an installed app whose package is gone): never one
            # derived from the working directory.
            raise self.refused(
                env,
                msg.instance_id,
                LineUpError(ErrorCode.SURFACE_UNAVAILABLE, "no web folder"),
            )
        # No I/O: the hostbridge resolves.
        web_root = Path(root or Path(os.path.abspath(manifest)).parent / "web")
        declared = self._book.manifest(surface.app_scope)
        return SurfaceAssetsReply(
            instance_id=msg.instance_id,
            surface_id=surface.surface_id,
            web_root=str(web_root),
            document=surface.entrypoint.document,
            mcp_ui=surface.entrypoint.mcp_app,
            mcp_app=surface.entrypoint.mcp_app is not None,
            resources=tuple(
                SurfaceResource(entrypoint=e.id, document=e.document, ui=ui_meta(e.mcp_app))
                for e in (declared.entrypoints if declared is not None else ())
                if e.kind == SURFACE_KIND and e.mcp_app is not None
            ),
        )

    async def event(self, msg: SurfaceEventRequest, env: Envelope) -> SurfaceAccepted:
        """An event the Surface sent, checked against its entrypoint, handed to the app as
        `miniapp.surface.event`. An app that is down is the code its channel gives
        (`actor_restarted`, `actor_unavailable`): the Surface retries."""
        try:
            surface = self._open_surface(msg.instance_id, msg.surface_id)
            surface.check_event(msg.name, msg.data)
            try:
                await self._port.bus.notify(
                    f"miniapp:{surface.app_scope}",
                    sdk.SurfaceEvent(
                        instance_id=msg.instance_id,
                        surface_id=surface.surface_id,
                        name=msg.name,
                        data=msg.data,
                    ),
                    timeout=NOTIFY_TIMEOUT,
                )
            except LineUpError as down:
                raise LineUpError(down.code, "the app is not there") from down
        except LineUpError as refused:
            raise self.refused(env, msg.instance_id, refused) from refused
        return SurfaceAccepted(instance_id=msg.instance_id, surface_id=surface.surface_id)

    async def session_data(self, msg: SurfaceSessionDataRequest, env: Envelope) -> SurfaceAccepted:
        """The Surface's way to its instance's session data: the app's own path (the same
        store requests, under the same lock, `stale_revision` alike). `subscribe` makes the
        sender (the hostbridge) a subscriber of that session while the Surface is open."""
        try:
            return await self._session_data(msg, env)
        except LineUpError as refused:
            raise self.refused(env, msg.instance_id, refused) from refused

    async def _session_data(self, msg: SurfaceSessionDataRequest, env: Envelope) -> SurfaceAccepted:
        surface = self._open_surface(msg.instance_id, msg.surface_id)
        key = (surface.app_scope, msg.instance_id)
        async with self._sessions.lock(key):
            surface = self._open_surface(msg.instance_id, msg.surface_id)  # still open?
            if msg.op == "replace":
                if msg.data is None or msg.expected_revision is None:
                    raise LineUpError(ErrorCode.BRIDGE_PARAMS_INVALID, "replace needs data")
                reply = await self._sessions.write(key, msg.data, msg.expected_revision)
                return SurfaceAccepted(
                    instance_id=msg.instance_id,
                    surface_id=surface.surface_id,
                    revision=reply.revision,
                    data=msg.data,
                )
            got = await self._sessions.read(key)
            if msg.op == "subscribe":
                # Under the session's lock: a write lands in this snapshot or comes next.
                self._sessions.watch(key, env.sender.name)
            return SurfaceAccepted(
                instance_id=msg.instance_id,
                surface_id=surface.surface_id,
                revision=got.revision,
                data=got.data,
            )
