"""The hostbridge actor: serves the Shell and relays between it and the runtime.

Views and items arrive from focus and runtime states from the transport, as events; they are
pushed to every connected Shell as `shell_protocol` frames, and a Shell that (re)connects gets
a greeting: the runtime's state, the views and the newest page of each instance's items
(`_views`), the interactions (`_interaction_relay`), the artifacts and the pending capability
prompts. What a Shell sends arrives already parsed against the protocol (`_server`), as one
typed `ShellAction`, and is handed to the service it is for; a frame that failed it is audited
here, by type.

The actor wires the services (the views, the interactions, the Surfaces, the artifacts, the
capabilities) to the server and to the bus, routes the runtime's events to them, and keeps the
runtime's lifecycle state as the Shell shows it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial
from typing import Any, Final, assert_never

import hypercorn.config
import trio
from pydantic import ValidationError

from lineup.actors.focus.messages import (
    InstanceReply,
    UiEventAccepted,
    UiEventRequest,
    UiIntentRequest,
)
from lineup.actors.kernel import (
    Actor,
    ActorKind,
    Envelope,
    ErrorCode,
    LineUpError,
    handles,
)
from lineup.actors.transport.messages import RuntimeStateReply, RuntimeStateRequest

from ._artifacts import ArtifactServer
from ._audit import user_record
from ._capabilities import CapabilityDesk
from ._interaction_relay import InteractionRelay
from ._listener import serve
from ._open import open_app
from ._server import ShellAccess, ShellHub, build_app
from ._surface_book import SurfaceBook
from ._surfaces import SurfaceRelay
from ._view_log import ViewLogRelay
from ._views import ViewRelay
from .messages import (
    SUPERVISOR_PHASES,
    AppSessionsUpdatedEvent,
    AppsUpdatedEvent,
    ArtifactCreatedEvent,
    CapabilityEndedEvent,
    CapabilityGatewayStartedEvent,
    CapabilityPromptEvent,
    GrantsChangedEvent,
    InteractionsUpdatedEvent,
    NoticeEvent,
    ProviderRunEvent,
    RuntimeStateEvent,
    SessionDataUpdatedEvent,
    SurfaceNotifyEvent,
    SurfaceToolProgressEvent,
    ViewItemsUpdatedEvent,
    ViewUpdatedEvent,
)
from .shell_protocol import (
    MAX_SOCKET_MESSAGE_BYTES,
    AppSessionContinueFrame,
    InteractionAnswerFrame,
    InteractionDraftFrame,
    RuntimeStatus,
    ShellAction,
    ShellHello,
    ShellNotice,
    ShellOutbound,
    ShellRuntime,
    ShellSessionData,
    ShellSurfaceNotify,
    SurfaceLogFrame,
    SurfaceRejectedFrame,
    SurfaceUnavailableFrame,
    TimelineEarlier,
    UiEventFrame,
    UiIntentFrame,
    UiOpenFrame,
)

__all__ = ["HostbridgeActor"]

log = logging.getLogger("lineup.hostbridge")

ASK_TIMEOUT: Final = 3.0
REFUSED: Final = "hostbridge.shell_frame_refused"
SURFACE_REJECTED: Final = "hostbridge.surface_rejected"  # a Shell's bridge dropped messages
SURFACE_UNAVAILABLE: Final = "hostbridge.surface_unavailable"  # a Shell could not mount one
# How long the Shells may take to be sent what was queued for them when the runtime stops:
# within its grace (`HOSTBRIDGE_GRACE`, supervisor/_spec.py), after which it is SIGTERMed.
SHELLS_CLOSE_WAIT: Final = 1.0


class HostbridgeActor(Actor):
    kind = ActorKind.HOSTBRIDGE

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.hub = ShellHub()
        self._state = "created"
        self._reason: str | None = None  # why the link is down, an appserver_* code
        self._state_since_ns = 0  # when the transport entered `_state` (`RuntimeStateEvent`)
        # The supervisor's part of the lifecycle (restoring, stopping), shown over the link's.
        self._phase: str | None = None
        self._book = SurfaceBook()  # each live instance's Surface, from its views
        self._views = ViewRelay(self.bus, self.hub, self._book)
        self._interactions = InteractionRelay(self.bus, self.hub)
        self._caps = CapabilityDesk(self.bus, self.hub)
        self._relay: SurfaceRelay | None = None  # once it runs
        self._view_logs = ViewLogRelay(self.bus, self._book)  # an MCP App's log lines

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        settings = self.ctx.config.get("hostbridge")
        if not settings:  # a tree without a Shell (kernel tests)
            task_status.started()
            await trio.sleep_forever()
        access = ShellAccess(port=int(settings["port"]), token=str(settings["token"]))
        config = hypercorn.config.Config()
        config.bind = [f"127.0.0.1:{access.port}"]
        config.accesslog = None  # URLs would carry the token
        config.errorlog = log
        # Enforced by wsproto as the bytes arrive: a larger message is refused (1009) once
        # this much of it is read, never buffered whole (`_server._listen` then holds every
        # frame but a picked file's to `MAX_SHELL_FRAME`).
        config.websocket_max_message_size = MAX_SOCKET_MESSAGE_BYTES
        relay = self._relay = SurfaceRelay(self.bus, self._book, access.port)
        self._artifacts = ArtifactServer(self.bus, access.token)
        app = build_app(
            access,
            self.hub,
            self._greeting,
            self._from_shell,
            self._refused,
            surfaces=relay,
            artifacts=self._artifacts,
            capabilities=self._caps,
        )
        async with trio.open_nursery() as nursery:
            await nursery.start(
                partial(serve, app, config, pinned=bool(settings.get("pinned", True)))
            )
            nursery.start_soon(self._views.push)
            self._interactions.start(nursery.start_soon)
            self._caps.start(access.token, nursery.start_soon)
            relay.spawn = relay.tools.spawn = nursery.start_soon
            task_status.started()

    async def finish(self) -> None:
        """The runtime stops: each Shell is sent what it was told before (the supervisor's
        `stopping` last), then its socket is closed as going away."""
        with trio.move_on_after(SHELLS_CLOSE_WAIT):
            await self.hub.close()

    # ------------------------------------------------------------------ runtime → Shell

    @handles(ViewUpdatedEvent)
    def on_view(self, msg: ViewUpdatedEvent, env: Envelope) -> None:
        self._views.view(msg)

    @handles(ViewItemsUpdatedEvent)
    def on_view_items(self, msg: ViewItemsUpdatedEvent, env: Envelope) -> None:
        self._views.items(msg)

    @handles(AppsUpdatedEvent)
    def on_apps(self, msg: AppsUpdatedEvent, env: Envelope) -> None:
        self._views.apps(msg)

    @handles(RuntimeStateEvent)
    def on_runtime_state(self, msg: RuntimeStateEvent, env: Envelope) -> None:
        if env.sender.kind is ActorKind.SUPERVISOR:
            self._phase = msg.state if msg.state in SUPERVISOR_PHASES else None
        else:
            self._link(msg.state, msg.reason, msg.since_ns)
        state, reason = self._runtime_shown()
        self.hub.broadcast(ShellRuntime(state=state, reason=reason))

    @handles(NoticeEvent)
    def on_notice(self, msg: NoticeEvent, env: Envelope) -> None:
        self.hub.broadcast(ShellNotice(level=msg.level, text=msg.text))

    def _link(self, state: str, reason: str | None, since_ns: int) -> None:
        """The link's state, as the transport told it or answered it: the later-entered one
        holds. A greeting's request and a change's tell cross on the way, and the reply handed
        over first may be the older (the Shell said Synchronizing… for good)."""
        if since_ns >= self._state_since_ns:
            self._state, self._reason, self._state_since_ns = state, reason, since_ns

    def _runtime_shown(self) -> tuple[str, str | None]:
        if self._phase is not None:
            return self._phase, None
        return self._state, self._reason

    # ------------------------------------------------------------------ surfaces

    @handles(SurfaceToolProgressEvent)
    def on_surface_tool_progress(self, msg: SurfaceToolProgressEvent, env: Envelope) -> None:
        """A Surface's own `tools/call` reported progress: to the Shell that asked."""
        if self._relay is not None:
            self._relay.tools.progress(msg)

    @handles(SessionDataUpdatedEvent)
    def on_session_data(self, msg: SessionDataUpdatedEvent, env: Envelope) -> None:
        """A newer revision of a Surface's session data: to every Shell (each forwards it to
        its iframe only if that subscribed), while it is that instance's Surface."""
        self._to_surface(
            ShellSessionData,
            msg.instance_id,
            msg.surface_id,
            data=msg.data,
            revision=msg.revision,
        )

    @handles(SurfaceNotifyEvent)
    def on_surface_notify(self, msg: SurfaceNotifyEvent, env: Envelope) -> None:
        """News for a Surface that subscribed (its app's view model, its agent messages): to
        every Shell, while it is that instance's Surface."""
        self._to_surface(
            ShellSurfaceNotify, msg.instance_id, msg.surface_id, kind=msg.kind, params=msg.params
        )

    def _to_surface(
        self,
        frame: type[ShellSessionData | ShellSurfaceNotify],
        instance_id: str,
        surface_id: str,
        **fields: Any,
    ) -> None:
        """A `frame` for `surface_id`, to every Shell while it is `instance_id`'s Surface; one
        the Shell's protocol cannot carry is logged by its type and dropped."""
        if self._book.check(instance_id, surface_id) is not None:
            return
        try:
            built = frame(instance_id=instance_id, surface_id=surface_id, **fields)
        except ValidationError:
            tag = frame.model_fields["type"].default
            log.warning("hostbridge.frame_unbuildable type=%s", tag)
            return
        self.hub.broadcast(built)

    @handles(ArtifactCreatedEvent)
    def on_artifact(self, msg: ArtifactCreatedEvent, env: Envelope) -> None:
        """A new artifact: its card to every Shell."""
        if self._artifacts is not None:
            for frame in self._artifacts.created(msg.artifact):
                self.hub.broadcast(frame)

    def _surface_report(self, frame: SurfaceRejectedFrame | SurfaceUnavailableFrame) -> None:
        """What a Shell's bridge dropped (the bridge rejection counter: `subject_id` is
        "<count>:<instance_id>"), or a Surface it could not mount: audited, by code."""
        if isinstance(frame, SurfaceUnavailableFrame):
            code = ErrorCode.SURFACE_UNAVAILABLE.value
            self._refused_about(frame.type, SURFACE_UNAVAILABLE, code, frame.instance_id)
            return
        about = f"{frame.count}:{frame.instance_id or ''}"
        self._refused_about(frame.type, SURFACE_REJECTED, frame.code, about)

    # ------------------------------------------------------------------ capabilities

    @handles(CapabilityPromptEvent)
    def on_capability_prompt(self, msg: CapabilityPromptEvent, env: Envelope) -> None:
        self._caps.prompt(msg.prompt)

    @handles(ProviderRunEvent)
    def on_capability_run(self, msg: ProviderRunEvent, env: Envelope) -> None:
        self._caps.run(msg.run)

    @handles(CapabilityEndedEvent)
    def on_capability_ended(self, msg: CapabilityEndedEvent, env: Envelope) -> None:
        self._caps.ended(msg.id, msg.outcome)

    @handles(CapabilityGatewayStartedEvent)
    def on_gateway_started(self, msg: CapabilityGatewayStartedEvent, env: Envelope) -> None:
        self._caps.gateway_started()

    @handles(GrantsChangedEvent)
    def on_grants_changed(self, msg: GrantsChangedEvent, env: Envelope) -> None:
        self._caps.grants_changed()

    # ------------------------------------------------------------------ interactions

    @handles(InteractionsUpdatedEvent)
    def on_interactions(self, msg: InteractionsUpdatedEvent, env: Envelope) -> None:
        self._interactions.interactions(msg.interactions)

    @handles(AppSessionsUpdatedEvent)
    def on_app_sessions(self, msg: AppSessionsUpdatedEvent, env: Envelope) -> None:
        self._interactions.sessions(msg.sessions)

    # ------------------------------------------------------------------ greeting

    async def _greeting(self) -> list[ShellOutbound | Callable[[], ShellOutbound]]:
        """Everything a (re)connecting Shell needs: state, instances, views. The hello, first,
        is made as it is sent, with the runtime's state then: a change broadcast while the rest
        was gathered reached the socket first, and an older state after it would stay."""
        try:
            reply = await self.bus.request(
                "transport", RuntimeStateRequest(), expect=RuntimeStateReply, timeout=ASK_TIMEOUT
            )
            self._link(reply.state, reply.reason, reply.since_ns)
        except LineUpError:
            pass
        frames: list[ShellOutbound | Callable[[], ShellOutbound]] = [self._hello]
        frames.extend(await self._views.greeting())
        frames.extend(self._interactions.frames())
        frames.extend(await self._artifact_cards())
        frames.extend(await self._caps.greeting())
        self._interactions.relist()
        return frames

    def _hello(self) -> ShellOutbound:
        state, reason = self._runtime_shown()
        return ShellHello(runtime=RuntimeStatus(state=state, reason=reason))

    async def _artifact_cards(self) -> list[ShellOutbound]:
        return [] if self._artifacts is None else await self._artifacts.listed()

    # ------------------------------------------------------------------ Shell → runtime

    async def _from_shell(self, frame: ShellAction) -> None:
        """A user action from the Shell, already checked against the protocol: to the service
        it is for, by its type (every type of `ShellAction` has its case)."""
        match frame:
            case UiIntentFrame():
                await self._intent(frame)
            case UiOpenFrame():
                await open_app(self.bus, self.hub, frame)
            case InteractionAnswerFrame():
                await self._interactions.answer(frame)
            case InteractionDraftFrame():
                self._interactions.draft(frame)
            case AppSessionContinueFrame():
                await self._interactions.continue_(frame)
            case SurfaceRejectedFrame() | SurfaceUnavailableFrame():
                self._surface_report(frame)
            case SurfaceLogFrame():
                await self._view_logs.relay(frame)
            case UiEventFrame():
                await self._ui_event(frame)
            case _:
                assert_never(frame)

    async def _ui_event(self, frame: UiEventFrame) -> None:
        """An action on an instance's view: to the app that owns it, through focus; the next
        older page of a timeline, from what focus keeps."""
        event = frame.event
        self._audit_user("ui.event", event.kind, subject_id=frame.instance_id)
        if isinstance(event, TimelineEarlier):
            # Older items, from what focus keeps: no app is asked. Every Shell gets them (the
            # hub does not say which asked); each keeps a bounded number.
            for page_frame in await self._views.page(
                frame.instance_id, (event.before_order, event.before_id)
            ):
                self.hub.broadcast(page_frame)
            return
        try:
            await self.bus.request(
                "focus",
                # As the Shell sent it: the app reads only the fields the Shell set.
                UiEventRequest(
                    instance_id=frame.instance_id, event=event.model_dump(exclude_unset=True)
                ),
                expect=UiEventAccepted,
                timeout=ASK_TIMEOUT,
                retry=True,
            )
        except LineUpError as exc:
            self._error_notice("That action could not be delivered.", exc.code.value)

    async def _intent(self, frame: UiIntentFrame) -> None:
        """The user switches to, or closes, an instance (the app switcher)."""
        self._audit_user("ui.intent", frame.intent, subject_id=frame.instance_id)
        try:
            await self.bus.request(
                "focus",
                UiIntentRequest(
                    intent=frame.intent, instance_id=frame.instance_id, force=frame.force
                ),
                expect=InstanceReply,
                timeout=ASK_TIMEOUT * 5,
                retry=True,
            )
        except LineUpError as exc:
            self._error_notice("That could not be done.", exc.code.value)

    def _audit_user(
        self,
        event: str,
        message_type: str | None,
        *,
        code: str | None = None,
        subject_id: str | None = None,
    ) -> None:
        """A row for what the user did at the Shell (its kind and target, never its text)."""
        self.bus.audit(user_record(event, message_type, code=code, subject_id=subject_id))

    def _error_notice(self, text: str, code: str) -> None:
        self.hub.broadcast(ShellNotice(level="error", text=text, code=code))

    def _refused(
        self,
        message_type: str | None,
        event: str = REFUSED,
        code: str = ErrorCode.INVALID_ARGUMENTS.value,
    ) -> None:
        """A Shell frame failed the protocol (or a handshake a check, `event`): refused, and
        recorded by type (never content), within the bus's bound per offender: past it, only
        counted (`audit.suppressed`)."""
        self.bus.audit_refusal(user_record(event, message_type, code=code))

    def _refused_about(
        self, message_type: str, event: str, code: str, subject_id: str | None
    ) -> None:
        """As `_refused`, with what the refusal was about (an instance)."""
        record = user_record(event, message_type, code=code, subject_id=subject_id)
        self.bus.audit_refusal(record)
