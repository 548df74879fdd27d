"""The hostbridge actor: serves the Shell and relays between it and the runtime.

Views arrive from focus and runtime states from the transport, as events; they are pushed to
every connected Shell as `shell_protocol` frames. Markdown in a view is turned into a safe token
tree *here*, in trusted code: a MiniApp's view never carries markup the Shell would render as
such. What a Shell sends arrives already parsed against the protocol (`_server`); a frame that
failed it is audited here, by type.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from typing import Any, Final

import hypercorn.config
import trio
from pydantic import ValidationError

from lineup.actors.focus.messages import (
    InstanceReply,
    UiEventAccepted,
    UiEventRequest,
    UiIntentRequest,
    ViewsReply,
    ViewsRequest,
)
from lineup.actors.kernel import (
    Actor,
    ActorKind,
    AuditRecord,
    Envelope,
    ErrorCode,
    LineUpError,
    handles,
)
from lineup.actors.transport.messages import RuntimeStateReply, RuntimeStateRequest

from ._listener import serve
from ._markdown import markdown_tree
from ._refusals import RefusalLedger
from ._server import ShellAccess, ShellHub, build_app
from .messages import AppsUpdatedEvent, RuntimeStateEvent, ViewUpdatedEvent
from .shell_protocol import (
    MAX_SHELL_FRAME_BYTES,
    RuntimeStatus,
    ShellApps,
    ShellHello,
    ShellInstance,
    ShellNotice,
    ShellOutbound,
    ShellRuntime,
    ShellView,
    UiEventFrame,
    UiIntentFrame,
)

__all__ = ["HostbridgeActor", "TreeCache"]

log = logging.getLogger("lineup.hostbridge")

ASK_TIMEOUT: Final = 3.0
INLINE_PARSE_LIMIT: Final = 2048  # characters; longer Markdown is parsed on a worker thread
TREE_CACHE: Final = 2048  # distinct texts remembered
VIEW_QUEUE: Final = 256
REFUSED: Final = "hostbridge.shell_frame_refused"
REFUSALS_DROPPED: Final = "hostbridge.refusals_dropped"


class TreeCache:
    """Markdown → token tree, remembered: a view update re-sends every item, but only new
    text is parsed, and long text is parsed on a worker thread (a hostile 64 KiB message can
    take seconds), never on the event loop that serves the Shells."""

    def __init__(self) -> None:
        self._trees: OrderedDict[str, list[dict[str, object]]] = OrderedDict()

    async def tree(self, markdown: str) -> list[dict[str, object]]:
        tree = self._trees.get(markdown)
        if tree is None:
            if len(markdown) > INLINE_PARSE_LIMIT:
                tree = await trio.to_thread.run_sync(markdown_tree, markdown)
            else:
                tree = markdown_tree(markdown)
            self._trees[markdown] = tree
            if len(self._trees) > TREE_CACHE:
                self._trees.popitem(last=False)
        else:
            self._trees.move_to_end(markdown)
        return tree

    async def shell_view(self, app_scope: str, instance_id: str, view: dict[str, Any]) -> ShellView:
        """The `shell.view` frame for a view, its Markdown turned into token trees.
        Raises ValidationError if the ids are not the protocol's."""
        safe = dict(view)
        items = view.get("items")
        if view.get("kind") == "chat.timeline" and isinstance(items, list):
            safe["items"] = [
                {key: value for key, value in item.items() if key != "markdown"}
                | {"tree": await self.tree(str(item.get("markdown", "")))}
                for item in items
                if isinstance(item, dict)
            ]
        return ShellView(app_scope=app_scope, instance_id=instance_id, view=safe)


class HostbridgeActor(Actor):
    kind = ActorKind.HOSTBRIDGE

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.hub = ShellHub()
        self._state = "created"
        self._reason: str | None = None  # why the link is down, an appserver_* code
        self._trees = TreeCache()
        # Views are converted and pushed by one task, in arrival order (no stale overwrite).
        self._views_in, self._views_out = trio.open_memory_channel[ViewUpdatedEvent](VIEW_QUEUE)
        self._refusals = RefusalLedger()

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
        # this much of it is read, never buffered whole.
        config.websocket_max_message_size = MAX_SHELL_FRAME_BYTES
        app = build_app(access, self.hub, self._greeting, self._from_shell, self._refused)
        async with trio.open_nursery() as nursery:
            await nursery.start(serve, app, config)
            nursery.start_soon(self._push_views)
            nursery.start_soon(self._report_dropped_refusals)
            task_status.started()

    # ------------------------------------------------------------------ runtime → Shell

    @handles(ViewUpdatedEvent)
    def on_view(self, msg: ViewUpdatedEvent, env: Envelope) -> None:
        try:
            self._views_in.send_nowait(msg)
        except trio.WouldBlock:
            log.warning("hostbridge.view_dropped instance=%s", msg.instance_id)

    async def _push_views(self) -> None:
        async for msg in self._views_out:
            if len(self.hub):
                try:
                    frame = await self._trees.shell_view(msg.app_scope, msg.instance_id, msg.view)
                except ValidationError:
                    log.warning("hostbridge.frame_unbuildable type=shell.view")
                    continue
                self.hub.broadcast(frame)

    @handles(AppsUpdatedEvent)
    def on_apps(self, msg: AppsUpdatedEvent, env: Envelope) -> None:
        frame = _apps_frame(msg.foreground, msg.instances)
        if frame is not None:
            self.hub.broadcast(frame)

    @handles(RuntimeStateEvent)
    def on_runtime_state(self, msg: RuntimeStateEvent, env: Envelope) -> None:
        self._state, self._reason = msg.state, msg.reason
        self.hub.broadcast(ShellRuntime(state=msg.state, reason=msg.reason))

    async def _intent(self, frame: UiIntentFrame) -> None:
        """The user switches to, or closes, an instance (the app switcher)."""
        self._audit_user("ui.intent", frame.intent, subject_id=frame.instance_id)
        try:
            await self.bus.request(
                "focus",
                UiIntentRequest(intent=frame.intent, instance_id=frame.instance_id),
                expect=InstanceReply,
                timeout=ASK_TIMEOUT * 5,
                retry=True,
            )
        except LineUpError as exc:
            self._error_notice(f"That could not be done ({exc.code.value}).")

    def _audit_user(
        self,
        event: str,
        message_type: str | None,
        *,
        code: str | None = None,
        subject_id: str | None = None,
    ) -> None:
        """A row for what the user did at the Shell (its kind and target, never its text)."""
        self.bus.audit(
            AuditRecord(
                event=event,
                actor="hostbridge",
                peer="user",
                code=code,
                message_type=None if message_type is None else message_type[:100],
                subject_id=None if subject_id is None else subject_id[:200],
            )
        )

    def _error_notice(self, text: str) -> None:
        self.hub.broadcast(ShellNotice(level="error", text=text))

    async def _greeting(self) -> list[ShellOutbound]:
        """Everything a (re)connecting Shell needs: state, instances, views."""
        try:
            reply = await self.bus.request(
                "transport", RuntimeStateRequest(), expect=RuntimeStateReply, timeout=ASK_TIMEOUT
            )
            self._state, self._reason = reply.state, reply.reason
        except LineUpError:
            pass
        runtime = RuntimeStatus(state=self._state, reason=self._reason)
        frames: list[ShellOutbound] = [ShellHello(runtime=runtime)]
        try:
            views = await self.bus.request(
                "focus", ViewsRequest(), expect=ViewsReply, timeout=ASK_TIMEOUT
            )
        except LineUpError:
            return frames
        apps = _apps_frame(views.foreground, views.instances)
        if apps is not None:
            frames.append(apps)
        for v in views.views:
            try:
                frames.append(await self._trees.shell_view(v.app_scope, v.instance_id, v.view))
            except ValidationError:
                log.warning("hostbridge.frame_unbuildable type=shell.view")
        return frames

    # ------------------------------------------------------------------ Shell → runtime

    async def _from_shell(self, frame: UiEventFrame | UiIntentFrame) -> None:
        """A user action from the Shell, already checked against the protocol."""
        if isinstance(frame, UiIntentFrame):
            await self._intent(frame)
            return
        event = frame.event
        self._audit_user("ui.event", event.kind, subject_id=frame.instance_id)
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
            self._error_notice(f"That action could not be delivered ({exc.code.value}).")

    def _refused(
        self,
        message_type: str | None,
        event: str = REFUSED,
        code: str = ErrorCode.INVALID_ARGUMENTS.value,
    ) -> None:
        """A Shell frame failed the protocol (or a handshake a check, `event`): refused, and
        recorded by type (never content), at a bounded rate per event (`RefusalLedger`): past
        it, only counted."""
        now = trio.current_time()
        self._report_dropped(now)
        if self._refusals.admit(event, now):
            self._audit_user(event, message_type, code=code)

    def _report_dropped(self, now: float) -> None:
        for kind, dropped in self._refusals.due(now):
            # The count rides in subject_id: an audit row has no number field.
            self._audit_user(REFUSALS_DROPPED, kind, subject_id=str(dropped))

    async def _report_dropped_refusals(self) -> None:
        """Counter rows for windows that ended with drops, even if no refusal follows."""
        while True:
            await trio.sleep(self._refusals.window / 2)
            self._report_dropped(trio.current_time())


def _apps_frame(foreground: str, instances: tuple[dict[str, Any], ...]) -> ShellApps | None:
    """The `shell.apps` frame for focus's instance list, or None (logged) if it is not the
    protocol's: a peer's mistake must not take the Shell's socket down."""
    try:
        return ShellApps(
            foreground=foreground,
            instances=tuple(ShellInstance.model_validate(i) for i in instances),
        )
    except ValidationError:
        log.warning("hostbridge.frame_unbuildable type=shell.apps")
        return None
