"""Navigation between apps (seed 004 §6.2 `AppNavigationAPI`): the apps this app may open, and
its requests to launch, focus and close instances and to open the user's default app. The
runtime decides each (the checks and their codes: `lineup.sdk._protocol.navigation`).

Every request is made from one of the app's instances (`from_instance_id`; default: the
process's own), which the runtime checks is the app's and live. `apps.open` is kept as it was:
a launch of the app's default entrypoint, in front, idempotent by its `request_id`.
"""

from __future__ import annotations

from . import protocol as p
from ._channel import RuntimeChannel
from ._services import Apps

__all__ = ["Navigation"]


class Navigation(Apps):
    """`AppContext.apps` (the module's docstring)."""

    def __init__(self, host: RuntimeChannel, instance_id: str) -> None:
        super().__init__(host)
        self._instance_id = instance_id

    async def list_available(self) -> tuple[p.AppSummary, ...]:
        """Every app an open would start now (installed, enabled, compatible), the chat
        first; `is_default` marks the user's default app."""
        reply = await self._host.call(
            "focus", p.AppsListAvailableRequest(), p.AppsListAvailableReply
        )
        return reply.apps

    async def launch(
        self,
        app_scope: str,
        request_id: str,
        *,
        entrypoint: str | None = None,
        display_mode: p.DisplayMode = "foreground",
        conversation_id: str | None = None,
        from_instance_id: str | None = None,
    ) -> p.AppInstanceHandle:
        """Launch `app_scope` at `entrypoint` (None: its default), in front or behind, in
        `conversation_id` (None: the current one); a handle of the instance. Idempotent by
        `request_id`. Raises `LineUpError`: `app_not_installed`, `app_disabled`,
        `app_version_mismatch`, `entrypoint_not_found`, `surface_unavailable`,
        `foreground_required` (in front, asked from an instance that is not),
        `conversation_mismatch`, `quota_exceeded`."""
        return await self._host.call(
            "focus",
            p.AppLaunchRequest(
                app_scope=app_scope,
                request_id=request_id,
                from_instance_id=from_instance_id or self._instance_id,
                entrypoint=entrypoint,
                display_mode=display_mode,
                conversation_id=conversation_id,
            ),
            p.AppInstanceHandle,
        )

    async def focus(
        self, instance_id: str, *, from_instance_id: str | None = None
    ) -> p.CommandReceipt:
        """Bring `instance_id` to the front: one of this app's, one it launched, or the chat.
        Raises `app_instance_not_found`, `app_scope_mismatch` (another app's), or
        `foreground_required` (another app's, asked from an instance not in front)."""
        return await self._host.call(
            "focus",
            p.AppFocusRequest(
                instance_id=instance_id, from_instance_id=from_instance_id or self._instance_id
            ),
            p.CommandReceipt,
        )

    async def close(
        self, instance_id: str, *, from_instance_id: str | None = None
    ) -> p.CommandReceipt:
        """Close `instance_id`: one of this app's or one it launched. Raises
        `app_instance_not_found`, `app_scope_mismatch`, `lifecycle_denied` (the chat)."""
        return await self._host.call(
            "focus",
            p.AppCloseRequest(
                instance_id=instance_id, from_instance_id=from_instance_id or self._instance_id
            ),
            p.CommandReceipt,
        )

    async def open_default_app(self, *, from_instance_id: str | None = None) -> p.AppInstanceHandle:
        """Bring the user's default app (the chat when none is set) to the front. Raises
        `foreground_required`, or the default app's refusal (`app_disabled`, …)."""
        return await self._host.call(
            "focus",
            p.AppOpenDefaultRequest(from_instance_id=from_instance_id or self._instance_id),
            p.AppInstanceHandle,
        )
