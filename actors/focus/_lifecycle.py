"""The life of focus's instances (DESIGN §5, seed 004 §4): launch, resume, bring forward, send
back, close, fail; each change persisted before anyone is told.

Theory of operation
-------------------
Each change of an instance's state or of the stack is one commit of `Instances`, written to the
store as one request (one transaction, `persist`); only then are its effects carried out
(announce to the router, ask an app for its view, push the Shell's app list, forget an ended
instance's view and Surface). A commit the store did not take is put back and goes with the
next one. One change at a time (`lock`).

After a restart focus rebuilds both from the store (`recover`): instances caught `starting` or
`stopping` come back `suspended`, never as done. After a restart of the whole runtime no MiniApp
process runs, so every app instance left open is `suspended` (seed 004 §4.4): it keeps its tab,
never the front, and is resumed when the user brings it forward or a call names it (its process
starts; the app is told `app.opened` for it and restores it from its session data, as a call
delivered again would), or it is closed. An app's process runs while it has a live instance;
focus asks the supervisor to start or stop it (the only program it may name is the SDK's host).
Closing an instance restores the previous live instance (the recovery app is `chat`; the
recovery app itself when the tool that opened the instance says `restore_previous_focus`
false) and, once
that is persisted, tells the router (`router.instance.event`), which converges the instance's
unfinished calls to `cancelled(app_closed)`; focus never waits on the router.
"""

from __future__ import annotations

import logging
from typing import Any, Final, Literal, cast

import trio

from lineup.actors.kernel import AuditRecord, ErrorCode, LineUpError
from lineup.actors.kernel.control import (
    ChildStartReply,
    ChildStartRequest,
    ChildStopReply,
    ChildStopRequest,
)
from lineup.actors.router.messages import InstanceEvent
from lineup.actors.store.messages import (
    MAX_FOCUS_STACK,
    FocusStackGetReply,
    FocusStackGetRequest,
    InstanceCommitReply,
    InstanceCommitRequest,
    InstanceListReply,
    InstanceListRequest,
    InstanceModeSet,
    InstanceMove,
    InstanceRecoverReply,
    InstanceRecoverRequest,
    InstanceState,
    InstanceTransitionReply,
    InstanceTransitionRequest,
    InstanceUpsertRequest,
)
from lineup.facts.modes import Mode
from lineup.facts.scopes import CHAT
from lineup.sdk import protocol as sdk
from lineup.sdk.manifest import Manifest

from ._access import Access
from ._installed import InstalledApps
from ._instances import Announce, Commit, Effect, PushApps, RefreshView, TellMode
from ._port import Port
from ._surface_service import SurfaceService
from ._view_service import ViewService
from .messages import InstanceReply, LaunchRequest

__all__ = ["MAX_OPENED_PER_APP", "START_TIMEOUT", "Lifecycle"]

log = logging.getLogger("lineup.focus")

START_TIMEOUT: Final = 20.0
# Live instances one MiniApp may hold open through `apps.open`: a loop of opens is refused
# here, long before the focus stack (MAX_FOCUS_STACK) is full for the Agent's launches.
MAX_OPENED_PER_APP: Final = 8


class Lifecycle:
    """The instances' changes and their effects (see the module's docstring). `installed`
    checks an installed app again before its process starts; `views` and `surfaces` forget
    what an ended instance showed."""

    def __init__(
        self,
        port: Port,
        access: Access,
        installed: InstalledApps,
        views: ViewService,
        surfaces: SurfaceService,
    ) -> None:
        self._port = port
        self._access = access
        self._book = access.book
        self.instances = access.instances
        self._installed = installed
        self._views = views
        self._surfaces = surfaces
        self.lock = trio.Lock()  # one change of instances/stack at a time
        # Instances opened by a tool whose `restore_previous_focus` is false: closing one gives
        # the front to the recovery app, not back to the app before it. Kept on the instance's
        # record (`restore_previous`) and read back at `recover`.
        self._no_restore: set[str] = set()

    # ------------------------------------------------------------------ persistence

    async def recover(self, *, runtime_restarted: bool) -> None:
        """Rebuild the instances and the stack from the store (see the module's docstring)."""
        await self._port.store(InstanceRecoverRequest(), InstanceRecoverReply)
        rows = await self._port.store(InstanceListRequest(), InstanceListReply)
        stack = await self._port.store(FocusStackGetRequest(), FocusStackGetReply)
        # A first incarnation is a (re)start of the whole runtime, so no MiniApp process runs:
        # every app instance left open is suspended until the user or a call resumes it. (A
        # focus restarted alone finds the processes running and asks them for their views.)
        self.instances.recover(
            ((row.instance_id, row.app_scope, row.state) for row in rows.instances),
            stack.instance_ids,
            runtime_restarted=runtime_restarted,
            modes={row.instance_id: row.mode for row in rows.instances if row.mode is not None},
            parents={
                row.instance_id: row.parent_instance_id
                for row in rows.instances
                if row.parent_instance_id is not None
            },
        )
        self._no_restore = {row.instance_id for row in rows.instances if not row.restore_previous}
        await self._persist()

    async def _persist(self) -> None:
        """Write one change of focus (`Instances.commit`: the instance it creates, the moves
        since the last write, the stack after them) as ONE store request (one transaction),
        then carry out what those moves do. Nothing is told before it is written."""
        commit = self.instances.commit()
        try:
            await self._port.store(_commit_request(commit, self._no_restore), InstanceCommitReply)
        except BaseException:
            self.instances.rewind(commit)  # not written: it is still to be written
            raise
        # The router's index, before the announcements (their tasks tell after this is sent):
        # a `started` never reaches the router before the index that has its instance.
        await self._access.tell_index()
        for effect in self.instances.effects(commit):
            self._carry_out(effect)

    def _carry_out(self, effect: Effect) -> None:
        if isinstance(effect, Announce):
            event = InstanceEvent(
                instance_id=effect.instance_id, app_scope=effect.app_scope, event=effect.event
            )
            self._port.soon(self._port.tell_router, event)
        elif isinstance(effect, RefreshView):
            self._port.soon(self._port.tell_app, effect.app_scope, sdk.ViewRefreshEvent())
            if effect.instance_id != CHAT:
                # A process started for a resumed instance may have no call to deliver again
                # that would show it (the user opened it from the Shell): it is told the
                # instance is open, and restores it from its session data (idempotent).
                opened = sdk.UiEvent(
                    instance_id=effect.instance_id, event={"kind": sdk.UI_APP_OPENED}
                )
                self._port.soon(self._port.tell_app, effect.app_scope, opened)
        elif isinstance(effect, TellMode):
            told = sdk.ModeChangedEvent(
                instance_id=effect.instance_id, mode=effect.mode, restored=effect.restored
            )
            self._port.soon(self._port.tell_app, effect.app_scope, told)
        elif isinstance(effect, PushApps):
            self._port.soon(self._access.push_apps)

    # ------------------------------------------------------------------ launch and find

    async def launch(
        self, msg: LaunchRequest, *, opener: str | None = None, parent: str | None = None
    ) -> InstanceReply:
        """Open (or find) the instance a launch names; `opener` is the MiniApp whose
        `apps.open` asks, held to MAX_OPENED_PER_APP live instances (the Agent is not), and
        `parent` its instance, kept on the new one's record."""
        self._access.require_enabled(msg.app_scope)
        instance_id = f"{msg.app_scope}:{msg.call_id}"[:200]
        if not msg.restore_previous_focus:
            self._no_restore.add(instance_id)
        async with self.lock:
            if not self.instances.is_live(instance_id):
                if opener is not None:
                    self._check_open_quota(opener)
                if self.instances.count_live() >= MAX_FOCUS_STACK:
                    # Refused before anything changes: the stack the store keeps is bounded,
                    # and an instance only in memory would be half-launched.
                    raise LineUpError(
                        ErrorCode.LIFECYCLE_DENIED,
                        f"{MAX_FOCUS_STACK} instances are open; close one first",
                    )
                self.instances.launch(
                    instance_id,
                    msg.app_scope,
                    foreground=msg.foreground,
                    call_id=msg.call_id,
                    conversation_id=msg.conversation_id,
                    parent_instance_id=parent,
                )
                try:
                    await self._persist()
                except BaseException:
                    # Not written: the instance exists nowhere, so not in memory either.
                    self.instances.forget(instance_id)
                    raise
        try:
            await self.ensure_running(instance_id)
        except (LineUpError, trio.TooSlowError) as exc:
            # Its app never came up: the instance fails (its held calls end activation_failed).
            log.warning("focus.start_failed instance=%s", instance_id)
            if self.instances.is_live(instance_id):
                await self._end(
                    instance_id, msg.app_scope, "failed", error=ErrorCode.ACTIVATION_FAILED.value
                )
            raise LineUpError(ErrorCode.ACTIVATION_FAILED, instance_id) from exc
        async with self.lock:
            if not self.instances.is_live(instance_id):
                # Closed while it was starting: the start is cancelled.
                raise LineUpError(ErrorCode.ACTIVATION_CANCELLED, instance_id)
            state = self.instances.state_of(instance_id)
            if state == "starting":
                self.instances.ready(instance_id)
                await self._persist()
            elif state == "suspended" or msg.foreground:
                self.instances.resume(instance_id, foreground=msg.foreground)
                await self._persist()
        return self.reply(instance_id)

    def _check_open_quota(self, opener: str) -> None:
        """Refuse (and audit) an `apps.open` from `opener` past its quota of live instances.
        Counted from the instance ids (`<scope>:nav-<opener>-<request id>`), so the count
        survives a restart of focus."""
        if self.instances.count_live(marked=f"nav-{opener}-") < MAX_OPENED_PER_APP:
            return
        self._port.bus.audit_refusal(  # a loop of opens writes a few rows, then a counter row
            AuditRecord(
                event="focus.open_quota_exceeded",
                actor=self._port.me.name,
                peer=f"miniapp:{opener}",
                code=ErrorCode.QUOTA_EXCEEDED.value,
                message_type=sdk.AppOpenRequest.TYPE,
            )
        )
        raise LineUpError(
            ErrorCode.QUOTA_EXCEEDED,
            f"{MAX_OPENED_PER_APP} instances opened by this app are live; close one first",
        )

    async def find(
        self, app_scope: str, instance_id: str | None, *, foreground: bool
    ) -> InstanceReply:
        """The instance a call names (else the app's newest live one), resumed if it was
        suspended, brought forward with `foreground`. The recovery app (the chat) is always
        there: it has no registry entry to check (its context's refresh asks here too)."""
        if app_scope != CHAT:
            self._access.require_enabled(app_scope)
        found = instance_id or self.instances.newest(app_scope)
        if found is None or self.instances.live_scope(found) != app_scope:
            raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, instance_id or app_scope)
        if self.instances.state_of(found) == "suspended" or foreground:
            # A call for a suspended instance resumes it: its process starts, and the app
            # restores the instance from its session data.
            await self._resume(found, foreground=foreground)
        return self.reply(found)

    async def _resume(self, instance_id: str, *, foreground: bool) -> None:
        """Run the instance's process, then put it back in play (on top with `foreground`).
        A suspended one is asked for its view (the Shell has none): the machine's effect."""
        await self.ensure_running(instance_id)
        async with self.lock:
            self.instances.resume(instance_id, foreground=foreground)
            await self._persist()

    def reply(self, instance_id: str) -> InstanceReply:
        state = self.instances.state_of(instance_id)
        assert state is not None  # asked only of an instance just found or changed
        return InstanceReply(
            instance_id=instance_id,
            app_scope=self.instances.owners()[instance_id],
            state=state,
            mode=self.instances.mode_of(instance_id),
            parent_instance_id=self.instances.parent_of(instance_id),
        )

    async def ensure_running(self, instance_id: str) -> None:
        """Start the process of the instance's app (idempotent; the chat has none)."""
        scope = self.instances.owners()[instance_id]
        if scope == CHAT:
            return
        await self._installed.check_launch(scope)  # an installed app's cache verifies again
        app = self._book.get(scope)
        if app is None:  # removed since the instance was opened
            raise LineUpError(ErrorCode.APP_NOT_INSTALLED, scope)
        manifest = self._book.manifest(scope)
        with trio.fail_after(START_TIMEOUT):
            await self._port.bus.request(
                "supervisor",
                ChildStartRequest(
                    name=f"miniapp:{scope}",
                    config={
                        "app": app.entry,
                        "instance_id": instance_id,
                        "app_version": manifest.version if manifest else "",  # its SDK context's
                        "app_path": app.app_path,  # a development app's folder
                        **_mcp_server(manifest, app.app_path),
                    },
                ),
                expect=ChildStartReply,
                timeout=START_TIMEOUT,
            )

    # ------------------------------------------------------------------ changes

    async def change(self, instance_id: str, action: str) -> None:
        """An app's, the Shell's or the user's lifecycle action on a live instance:
        `foreground`, `background` or `close`."""
        if action == "close":
            await self.close(instance_id)
            return
        if not self.instances.is_live(instance_id):
            raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, instance_id)
        if self.instances.state_of(instance_id) == "suspended":
            # The user (or the app) brings it back: its process starts first.
            await self._resume(instance_id, foreground=action == "foreground")
            if action == "foreground":
                return
        async with self.lock:
            if action == "foreground":
                self.instances.bring_forward(instance_id)
            else:
                self.instances.send_back(instance_id)
            await self._persist()

    async def bring_forward(self, instance_id: str) -> InstanceReply:
        await self.change(instance_id, "foreground")
        return self.reply(instance_id)

    async def close(self, instance_id: str) -> None:
        """Close one instance: its calls converge, focus goes back, its process may stop."""
        scope = self.instances.live_scope(instance_id)
        if scope is None:
            raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, instance_id)
        if instance_id == CHAT:
            raise LineUpError(ErrorCode.LIFECYCLE_DENIED, "the recovery app stays")
        async with self.lock:
            await self._port.store(
                InstanceTransitionRequest(instance_id=instance_id, to_state="stopping"),
                InstanceTransitionReply,
            )
        if not await self._end(instance_id, scope, "stopped"):
            await self._port.bus.request(
                "supervisor",
                ChildStopRequest(name=f"miniapp:{scope}"),
                expect=ChildStopReply,
                timeout=START_TIMEOUT,
            )
        self._port.soon(self._access.push_apps)

    async def switch_mode(self, instance_id: str, mode: Mode) -> None:
        """Record a live instance's new mode (seed 003 §5.1), then tell its app; the same
        mode again writes nothing and tells nothing."""
        async with self.lock:
            if self.instances.set_mode(instance_id, mode):
                await self._persist()

    async def close_all(self, scope: str) -> None:
        """Close the app's live instances, as a close does: calls converge, focus goes back."""
        for instance_id in self.instances.live_of(scope):
            try:
                await self.close(instance_id)
            except LineUpError as exc:
                if exc.code is not ErrorCode.APP_INSTANCE_NOT_FOUND:  # ended meanwhile
                    raise

    async def app_failed(self, scope: str, code: str | None = None) -> None:
        """The supervisor stopped the app for misbehaving: its live instances fail (with the
        supervisor's `code` on their records), their unfinished calls end, and focus goes back
        to the previous live instance."""
        for instance_id in self.instances.live_of(scope):
            await self._end(instance_id, scope, "failed", error=code)
        self._port.soon(self._access.push_apps)

    async def _end(
        self,
        instance_id: str,
        scope: str,
        state: Literal["stopped", "failed"],
        *,
        error: str | None = None,
    ) -> list[str]:
        """End an instance: it leaves the stack in `state`, in the store first, then the router
        is told (`ended` / `failed`) and converges its unfinished calls — an event, so focus
        never waits on the router; a router that missed it converges the calls of every ended
        instance when it starts. Returns the scope's instances still live, read under the same
        lock as the removal."""
        async with self.lock:
            restore = instance_id not in self._no_restore
            self.instances.remove(instance_id, state, error=error, restore_previous=restore)
            await self._persist()
            self._no_restore.discard(instance_id)
            self._views.drop(instance_id)
            self._surfaces.drop(scope, instance_id)
            return self.instances.live_of(scope)


def _commit_request(commit: Commit, no_restore: set[str]) -> InstanceCommitRequest:
    born = commit.born
    return InstanceCommitRequest(
        born=None
        if born is None
        else InstanceUpsertRequest(
            instance_id=born.instance_id,
            app_scope=born.app_scope,
            state="starting",
            app_session_id=born.instance_id,  # a sub-session is named after its instance
            created_by_call_id=born.call_id,
            conversation_id=born.conversation_id,
            parent_instance_id=born.parent_instance_id,
            mode=born.mode,
            restore_previous=born.instance_id not in no_restore,
        ),
        moves=tuple(
            InstanceMove(
                instance_id=i, to_state=cast(InstanceState, after), error=commit.errors.get(i)
            )
            for i, (_, after) in commit.moves.items()
        ),
        modes=tuple(InstanceModeSet(instance_id=i, mode=m) for i, m in commit.modes.items()),
        stack=commit.stack,
    )


def _mcp_server(manifest: Manifest | None, folder: str) -> dict[str, Any]:
    """An MCP app's server, for the supervisor (`supervisor._miniapps.mcp_server`): its
    manifest's command, run from the app's folder. Nothing for a LineUp app."""
    if manifest is None or manifest.mcp is None:
        return {}
    server: dict[str, Any] = {"command": list(manifest.mcp.command), "folder": folder}
    if manifest.mcp.network:  # its sandbox gets a proxy (`lineup.sdk.mcp_network`)
        server["network"] = list(manifest.mcp.network)
    return {"mcp": server}
