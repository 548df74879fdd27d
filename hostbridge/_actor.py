"""The hostbridge actor: serves the Shell and relays between it and the runtime.

Views and items arrive from focus and runtime states from the transport, as events; they are
pushed to every connected Shell as `shell_protocol` frames, an item per frame, and a Shell that
(re)connects gets the views and the newest page of each instance's items (older pages when it
asks). Markdown in an item is turned into a safe token tree *here*, in trusted code: a
MiniApp's view never carries markup the Shell would render as such.
What a Shell sends arrives already parsed against the protocol (`_server`); a frame that
failed it is audited here, by type.

Standard interactions and app sub-sessions come from the router (`router.ui.interactions.list`,
asked at start until the router answers, with a capped backoff, and again whenever a Shell
connects; then its `…updated` events) and are kept in an `InteractionMirror` with the input
drafts; the user's answers go to the router as `router.ui.interaction.answer`, and a refusal
comes back to the Shell as a notice with its code (and is audited as a refusal).
"""

from __future__ import annotations

import json
import logging
from collections import OrderedDict
from functools import partial
from typing import Any, Final

import hypercorn.config
import trio
from pydantic import ValidationError

from lineup.actors.focus.messages import (
    InstanceReply,
    UiEventAccepted,
    UiEventRequest,
    UiIntentRequest,
    ViewItemsPageReply,
    ViewItemsPageRequest,
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
from lineup.actors.router.messages import (
    AppSessionContinueReply,
    AppSessionContinueRequest,
    InteractionAnswerReply,
    InteractionAnswerRequest,
    InteractionsListReply,
    InteractionsListRequest,
)
from lineup.actors.transport.messages import RuntimeStateReply, RuntimeStateRequest
from lineup.sdk.protocol import ViewItem

from ._artifacts import ArtifactServer
from ._capabilities import CapabilityDesk
from ._interactions import InteractionMirror, interaction_frames, session_frames
from ._listener import serve
from ._markdown import markdown_tree
from ._open import open_app
from ._refusals import RefusalLog
from ._server import ShellAccess, ShellHub, build_app
from ._surfaces import SurfaceBook, SurfaceRelay
from .messages import (
    SUPERVISOR_PHASES,
    AppSessionsUpdatedEvent,
    AppsUpdatedEvent,
    ArtifactCreatedEvent,
    CapabilityEndedEvent,
    CapabilityPromptEvent,
    GrantsChangedEvent,
    InteractionsUpdatedEvent,
    NoticeEvent,
    ProviderRunEvent,
    RuntimeStateEvent,
    SessionDataUpdatedEvent,
    ViewItemsUpdatedEvent,
    ViewUpdatedEvent,
)
from .shell_protocol import (
    MAX_ITEMS_FRAME_BYTES,
    MAX_LAUNCHABLE,
    MAX_SOCKET_MESSAGE_BYTES,
    AppSessionContinueFrame,
    InteractionAnswerFrame,
    InteractionDraftFrame,
    RuntimeStatus,
    ShellAction,
    ShellApps,
    ShellHello,
    ShellInstance,
    ShellItems,
    ShellLaunchable,
    ShellNotice,
    ShellOutbound,
    ShellPage,
    ShellRuntime,
    ShellSessionData,
    ShellView,
    SurfaceRejectedFrame,
    SurfaceUnavailableFrame,
    TimelineEarlier,
    UiIntentFrame,
    UiOpenFrame,
)

__all__ = ["HostbridgeActor", "TreeCache"]

log = logging.getLogger("lineup.hostbridge")

ASK_TIMEOUT: Final = 3.0
INLINE_PARSE_LIMIT: Final = 2048  # characters; longer Markdown is parsed on a worker thread
TREE_CACHE_BYTES: Final = 64 * 1024 * 1024  # token trees remembered, compact JSON
MAX_TREE_BYTES: Final = 2 * 1024 * 1024  # one message's tree (a Shell frame holds 4 Mi chars)
VIEW_QUEUE: Final = 256
_RESERVED: Final = frozenset({"id", "order", "rev", "markdown", "tree"})
REFUSED: Final = "hostbridge.shell_frame_refused"
ANSWER_REFUSED: Final = "hostbridge.interaction_answer_refused"
CONTINUE_REFUSED: Final = "hostbridge.app_session_continue_refused"
SURFACE_REJECTED: Final = "hostbridge.surface_rejected"  # a Shell's bridge dropped messages
SURFACE_UNAVAILABLE: Final = "hostbridge.surface_unavailable"  # a Shell could not mount one
# Instance states that are gone or going (the Shell's ENDED_STATES, web/js/core/state.js).
ENDED_STATES: Final = frozenset({"stopping", "stopped", "failed"})
# What the supervisor tells of the lifecycle over the link's states; any other state it tells
# ends its part (the link's, from the transport, shows again).
ANSWER_TIMEOUT: Final = ASK_TIMEOUT * 5
LIST_BACKOFF_MIN: Final = 0.25  # seconds before asking a router that did not answer again
LIST_BACKOFF_MAX: Final = 5.0


class TreeCache:
    """Markdown → token tree, remembered up to `TREE_CACHE_BYTES` of trees: an item is
    parsed once whatever the number of Shells and reconnects, and long text is parsed on a
    worker thread (a hostile 256 KiB message can take seconds), never on the event loop that
    serves the Shells. A tree larger than `MAX_TREE_BYTES` is replaced by the text as one
    paragraph: the message is shown whole, only unformatted."""

    def __init__(self, budget: int = TREE_CACHE_BYTES) -> None:
        self._trees: OrderedDict[str, tuple[list[dict[str, object]], int]] = OrderedDict()
        self._budget = budget
        self._used = 0

    async def tree(self, markdown: str) -> list[dict[str, object]]:
        return (await self._sized_tree(markdown))[0]

    async def _sized_tree(self, markdown: str) -> tuple[list[dict[str, object]], int]:
        cached = self._trees.get(markdown)
        if cached is not None:
            self._trees.move_to_end(markdown)
            return cached
        if len(markdown) > INLINE_PARSE_LIMIT:
            tree, size = await trio.to_thread.run_sync(_bounded_tree, markdown)
        else:
            tree, size = _bounded_tree(markdown)
        self._trees[markdown] = (tree, size)
        self._used += size
        while self._used > self._budget and len(self._trees) > 1:
            _, (_, dropped) = self._trees.popitem(last=False)
            self._used -= dropped
        return tree, size

    async def shown(self, item: ViewItem) -> tuple[dict[str, Any], int]:
        """An item as the Shell gets it, its Markdown (if any) turned into a token tree, and
        about how many bytes it takes in a frame."""
        shown: dict[str, Any] = {k: v for k, v in item.fields.items() if k not in _RESERVED}
        size = len(item.model_dump_json().encode())
        markdown = item.fields.get("markdown")
        if isinstance(markdown, str):
            shown["tree"], tree_size = await self._sized_tree(markdown)
            size += tree_size - len(markdown.encode())
        return {**shown, "id": item.id, "order": item.order, "rev": item.rev}, size


def _bounded_tree(markdown: str) -> tuple[list[dict[str, object]], int]:
    """The tree of `markdown` and its size (compact JSON), within `MAX_TREE_BYTES`."""
    tree = markdown_tree(markdown)
    size = len(json.dumps(tree, separators=(",", ":"), ensure_ascii=False).encode())
    if size > MAX_TREE_BYTES:
        tree = [{"t": "p", "c": [{"t": "text", "v": markdown}]}]
        size = len(markdown.encode()) + 32
    return tree, size


class HostbridgeActor(Actor):
    kind = ActorKind.HOSTBRIDGE

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.hub = ShellHub()
        self._state = "created"
        self._reason: str | None = None  # why the link is down, an appserver_* code
        # The supervisor's part of the lifecycle (restoring, stopping), shown over the link's.
        self._phase: str | None = None
        self._trees = TreeCache()
        self._mirror = InteractionMirror()
        self._listed = trio.Event()  # the router answered a list once
        self._relisting = False
        self._quiet = RefusalLog(log)  # a router not up yet is asked every few seconds
        self._nursery: trio.Nursery | None = None
        self._book = SurfaceBook()  # each live instance's Surface, from its views
        self._artifacts: ArtifactServer | None = None  # once the server runs (it has the token)
        self._caps = CapabilityDesk(self.bus, self.hub, self.bus.audit_refusal)
        # Views are converted and pushed by one task, in arrival order (no stale overwrite).
        self._views_in, self._views_out = trio.open_memory_channel[
            ViewUpdatedEvent | ViewItemsUpdatedEvent
        ](VIEW_QUEUE)

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
        relay = SurfaceRelay(self.bus, self._book, access.port, self._refused_about)
        self._artifacts = ArtifactServer(self.bus, access.token, self._refused_artifact)
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
            nursery.start_soon(self._push_views)
            nursery.start_soon(self._list_until_answered)
            self._caps.start(access.token, nursery.start_soon)
            relay.spawn = nursery.start_soon
            self._nursery = nursery
            task_status.started()

    # ------------------------------------------------------------------ runtime → Shell

    @handles(ViewUpdatedEvent)
    def on_view(self, msg: ViewUpdatedEvent, env: Envelope) -> None:
        self._book.view(msg.instance_id, msg.view, msg.app_scope)
        self._queue_view(msg)

    @handles(ViewItemsUpdatedEvent)
    def on_view_items(self, msg: ViewItemsUpdatedEvent, env: Envelope) -> None:
        self._queue_view(msg)

    def _queue_view(self, msg: ViewUpdatedEvent | ViewItemsUpdatedEvent) -> None:
        try:
            self._views_in.send_nowait(msg)
        except trio.WouldBlock:
            log.warning("hostbridge.view_dropped instance=%s", msg.instance_id)

    async def _push_views(self) -> None:
        async for msg in self._views_out:
            if not len(self.hub):
                continue
            if isinstance(msg, ViewUpdatedEvent):
                try:
                    view = ShellView(
                        app_scope=msg.app_scope, instance_id=msg.instance_id, view=msg.view
                    )
                except ValidationError:
                    log.warning("hostbridge.frame_unbuildable type=shell.view")
                    continue
                self.hub.broadcast(view)
                continue
            # Only changed items come (focus drops a put of one as it was).
            for frame in await self._item_frames(msg.app_scope, msg.instance_id, msg.items):
                self.hub.broadcast(frame)

    async def _item_frames(
        self, app_scope: str, instance_id: str, items: tuple[ViewItem, ...]
    ) -> list[ShellOutbound]:
        """`items` as `shell.items` frames of at most `MAX_ITEMS_FRAME_BYTES` (or one item)."""
        batches: list[list[dict[str, Any]]] = []
        used = 0
        for item in items:
            shown, size = await self._trees.shown(item)
            if not batches or used + size > MAX_ITEMS_FRAME_BYTES:
                batches.append([])
                used = 0
            batches[-1].append(shown)
            used += size
        frames: list[ShellOutbound] = []
        for batch in batches:
            try:
                frames.append(
                    ShellItems(app_scope=app_scope, instance_id=instance_id, items=tuple(batch))
                )
            except ValidationError:
                log.warning("hostbridge.frame_unbuildable type=shell.items")
        return frames

    async def _page(self, instance_id: str, before: tuple[int, str] | None) -> list[ShellOutbound]:
        """One page of the instance's items (the newest before `before`) as frames: an item
        each, then `shell.page`. Empty if focus could not say."""
        try:
            page = await self.bus.request(
                "focus",
                ViewItemsPageRequest(
                    instance_id=instance_id,
                    before_order=None if before is None else before[0],
                    before_id=None if before is None else before[1],
                ),
                expect=ViewItemsPageReply,
                timeout=ASK_TIMEOUT,
            )
        except LineUpError:
            return []
        frames = await self._item_frames(page.app_scope, instance_id, page.items)
        try:
            frames.append(ShellPage(instance_id=instance_id, more=page.more))
        except ValidationError:
            log.warning("hostbridge.frame_unbuildable type=shell.page")
        return frames

    @handles(AppsUpdatedEvent)
    def on_apps(self, msg: AppsUpdatedEvent, env: Envelope) -> None:
        self._book.live(_live_ids(msg.instances))
        frame = _apps_frame(msg.foreground, msg.instances, msg.launchable)
        if frame is not None:
            self.hub.broadcast(frame)

    @handles(RuntimeStateEvent)
    def on_runtime_state(self, msg: RuntimeStateEvent, env: Envelope) -> None:
        if env.sender.kind is ActorKind.SUPERVISOR:
            self._phase = msg.state if msg.state in SUPERVISOR_PHASES else None
        else:
            self._state, self._reason = msg.state, msg.reason
        state, reason = self._runtime_shown()
        self.hub.broadcast(ShellRuntime(state=state, reason=reason))

    @handles(NoticeEvent)
    def on_notice(self, msg: NoticeEvent, env: Envelope) -> None:
        self.hub.broadcast(ShellNotice(level=msg.level, text=msg.text))

    def _runtime_shown(self) -> tuple[str, str | None]:
        if self._phase is not None:
            return self._phase, None
        return self._state, self._reason

    # ------------------------------------------------------------------ surfaces

    @handles(SessionDataUpdatedEvent)
    def on_session_data(self, msg: SessionDataUpdatedEvent, env: Envelope) -> None:
        """A newer revision of a Surface's session data: to every Shell (each forwards it to
        its iframe only if that subscribed), while it is that instance's Surface."""
        if self._book.check(msg.instance_id, msg.surface_id) is not None:
            return
        try:
            frame = ShellSessionData(
                instance_id=msg.instance_id,
                surface_id=msg.surface_id,
                data=msg.data,
                revision=msg.revision,
            )
        except ValidationError:
            log.warning("hostbridge.frame_unbuildable type=shell.session_data")
            return
        self.hub.broadcast(frame)

    @handles(ArtifactCreatedEvent)
    def on_artifact(self, msg: ArtifactCreatedEvent, env: Envelope) -> None:
        """A new artifact: its card to every Shell."""
        if self._artifacts is not None:
            for frame in self._artifacts.created(msg.artifact):
                self.hub.broadcast(frame)

    def _refused_artifact(self, event: str, code: str, artifact_id: str | None) -> None:
        self._refused_about("artifact.get", event, code, artifact_id)

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

    @handles(GrantsChangedEvent)
    def on_grants_changed(self, msg: GrantsChangedEvent, env: Envelope) -> None:
        self._caps.grants_changed()

    # ------------------------------------------------------------------ interactions

    @handles(InteractionsUpdatedEvent)
    def on_interactions(self, msg: InteractionsUpdatedEvent, env: Envelope) -> None:
        for frame in interaction_frames(self._mirror.upsert(msg.interactions)):
            self.hub.broadcast(frame)

    @handles(AppSessionsUpdatedEvent)
    def on_app_sessions(self, msg: AppSessionsUpdatedEvent, env: Envelope) -> None:
        for frame in session_frames(self._mirror.upsert_sessions(msg.sessions)):
            self.hub.broadcast(frame)

    async def _list_interactions(self, timeout: float = ASK_TIMEOUT) -> bool:
        """Ask the router for every interaction and sub-session it shows; False if it could
        not say (not up yet, or refusing): what the mirror holds then stays."""
        try:
            reply = await self.bus.request(
                "router", InteractionsListRequest(), expect=InteractionsListReply, timeout=timeout
            )
        except LineUpError as exc:
            self._quiet.refused("hostbridge.interactions_unlisted", code=exc.code.value)
            return False
        self._mirror.upsert(reply.interactions)
        self._mirror.upsert_sessions(reply.sessions)
        self._listed.set()
        return True

    async def _list_until_answered(self) -> None:
        """At start: ask until the router answers (it may start after us), then push what it
        said to the Shells already connected."""
        delay = LIST_BACKOFF_MIN
        while not self._listed.is_set():
            if await self._list_interactions():
                for frame in self._mirror.frames():
                    self.hub.broadcast(frame)
                return
            await trio.sleep(delay)
            delay = min(delay * 2, LIST_BACKOFF_MAX)

    def _relist(self) -> None:
        """A Shell connected: ask the router again, in the background (the greeting does not
        wait for it), and push what it says to every Shell. One at a time."""
        if self._relisting or self._nursery is None or not self._listed.is_set():
            return  # before the first answer, `_list_until_answered` is already asking
        self._relisting = True

        async def relist() -> None:
            try:
                if await self._list_interactions():
                    for frame in self._mirror.frames():
                        self.hub.broadcast(frame)
            finally:
                self._relisting = False

        self._nursery.start_soon(relist)

    async def _answer(self, frame: InteractionAnswerFrame) -> None:
        """The user answered a card: to the router, which checks it against the record."""
        self._audit_user("ui.interaction.answer", frame.type, subject_id=frame.interaction_id)
        try:
            reply = await self.bus.request(
                "router",
                InteractionAnswerRequest(interaction_id=frame.interaction_id, answer=frame.answer),
                expect=InteractionAnswerReply,
                timeout=ANSWER_TIMEOUT,
                retry=True,  # the router keeps the first answer: a repeat changes nothing
            )
        except LineUpError as exc:
            self._refused(frame.type, ANSWER_REFUSED, exc.code.value)
            self._error_notice(f"That answer was not taken ({exc.code.value}).")
            # The card was disabled when sent: the view as it is makes it answerable again.
            held = self._mirror.get(frame.interaction_id)
            for again in interaction_frames([held] if held is not None else []):
                self.hub.broadcast(again)
            return
        for update in interaction_frames(self._mirror.upsert((reply.interaction,))):
            self.hub.broadcast(update)

    async def _continue(self, frame: AppSessionContinueFrame) -> None:
        """The user continues an ended sub-session's work: the router starts a new instance."""
        self._audit_user("ui.app_session.continue", frame.type, subject_id=frame.app_session_id)
        try:
            reply = await self.bus.request(
                "router",
                AppSessionContinueRequest(app_session_id=frame.app_session_id),
                expect=AppSessionContinueReply,
                timeout=ANSWER_TIMEOUT,
                retry=True,  # a repeat answers the continuation already started
            )
        except LineUpError as exc:
            self._refused(frame.type, CONTINUE_REFUSED, exc.code.value)
            self._error_notice(f"That could not be continued ({exc.code.value}).")
            return
        for update in session_frames(self._mirror.upsert_sessions((reply.session,))):
            self.hub.broadcast(update)

    def _draft(self, frame: InteractionDraftFrame) -> None:
        # Not audited: a draft is typing, not an action (and comes often).
        if not self._mirror.draft(frame.interaction_id, frame.values):
            self._quiet.refused("hostbridge.draft_dropped")

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
        self.bus.audit(_user_record(event, message_type, code=code, subject_id=subject_id))

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
        state, reason = self._runtime_shown()
        runtime = RuntimeStatus(state=state, reason=reason)
        frames: list[ShellOutbound] = [ShellHello(runtime=runtime)]
        offset: int | None = 0
        while offset is not None:
            try:
                views = await self.bus.request(
                    "focus", ViewsRequest(offset=offset), expect=ViewsReply, timeout=ASK_TIMEOUT
                )
            except LineUpError:
                frames.extend(self._mirror.frames())
                frames.extend(await self._artifact_cards())
                frames.extend(await self._caps.greeting())
                self._relist()
                return frames
            if offset == 0:
                self._book.live(_live_ids(views.instances))
                apps = _apps_frame(views.foreground, views.instances, views.launchable)
                if apps is not None:
                    frames.append(apps)
            for v in views.views:
                self._book.view(v.instance_id, v.view, v.app_scope)
                try:
                    frames.append(
                        ShellView(app_scope=v.app_scope, instance_id=v.instance_id, view=v.view)
                    )
                except ValidationError:
                    log.warning("hostbridge.frame_unbuildable type=shell.view")
                    continue
                if v.items:
                    frames.extend(await self._page(v.instance_id, None))
            offset = views.next_offset if views.views else None
        frames.extend(self._mirror.frames())
        frames.extend(await self._artifact_cards())
        frames.extend(await self._caps.greeting())
        self._relist()
        return frames

    async def _artifact_cards(self) -> list[ShellOutbound]:
        return [] if self._artifacts is None else await self._artifacts.listed()

    # ------------------------------------------------------------------ Shell → runtime

    async def _from_shell(self, frame: ShellAction) -> None:
        """A user action from the Shell, already checked against the protocol."""
        if isinstance(frame, UiIntentFrame):
            await self._intent(frame)
            return
        if isinstance(frame, UiOpenFrame):
            await open_app(self.bus, frame, audit=self._audit_user, notice=self._error_notice)
            return
        if isinstance(frame, InteractionAnswerFrame):
            await self._answer(frame)
            return
        if isinstance(frame, InteractionDraftFrame):
            self._draft(frame)
            return
        if isinstance(frame, AppSessionContinueFrame):
            await self._continue(frame)
            return
        if isinstance(frame, SurfaceRejectedFrame | SurfaceUnavailableFrame):
            self._surface_report(frame)
            return
        event = frame.event
        self._audit_user("ui.event", event.kind, subject_id=frame.instance_id)
        if isinstance(event, TimelineEarlier):
            # Older items, from what focus keeps: no app is asked. Every Shell gets them (the
            # hub does not say which asked); each keeps a bounded number.
            for page_frame in await self._page(
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
            self._error_notice(f"That action could not be delivered ({exc.code.value}).")

    def _refused(
        self,
        message_type: str | None,
        event: str = REFUSED,
        code: str = ErrorCode.INVALID_ARGUMENTS.value,
    ) -> None:
        """A Shell frame failed the protocol (or a handshake a check, `event`): refused, and
        recorded by type (never content), within the bus's bound per offender: past it, only
        counted (`audit.suppressed`)."""
        self.bus.audit_refusal(_user_record(event, message_type, code=code))

    def _refused_about(
        self, message_type: str, event: str, code: str, subject_id: str | None
    ) -> None:
        """As `_refused`, with what the refusal was about (an instance)."""
        record = _user_record(event, message_type, code=code, subject_id=subject_id)
        self.bus.audit_refusal(record)


def _user_record(
    event: str, message_type: str | None, *, code: str | None, subject_id: str | None = None
) -> AuditRecord:
    """An audit row about the user at the Shell: kinds and ids only, cut to the row's bounds."""
    return AuditRecord(
        event=event,
        actor="hostbridge",
        peer="user",
        code=code,
        message_type=None if message_type is None else message_type[:100],
        subject_id=None if subject_id is None else subject_id[:200],
    )


def _live_ids(instances: tuple[dict[str, Any], ...]) -> set[str]:
    return {
        str(i.get("instance_id"))
        for i in instances
        if isinstance(i, dict) and i.get("state") not in ENDED_STATES
    }


def _apps_frame(
    foreground: str,
    instances: tuple[dict[str, Any], ...],
    launchable: tuple[dict[str, Any], ...] = (),
) -> ShellApps | None:
    """The `shell.apps` frame for focus's instance list, or None (logged) if it is not the
    protocol's: a peer's mistake must not take the Shell's socket down. The launcher's apps
    are only offered: one that is not the protocol's is left out, and the rest kept."""
    offered: list[ShellLaunchable] = []
    for app in launchable[:MAX_LAUNCHABLE]:
        try:
            offered.append(ShellLaunchable.model_validate(app))
        except ValidationError:
            log.warning("hostbridge.launchable_dropped")
    try:
        return ShellApps(
            foreground=foreground,
            instances=tuple(ShellInstance.model_validate(i) for i in instances),
            launchable=tuple(offered),
        )
    except ValidationError:
        log.warning("hostbridge.frame_unbuildable type=shell.apps")
        return None
