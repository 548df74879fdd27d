"""`FakeRuntime`, the runtime side of one MiniApp's channel in memory, which hands each request
to the fake of its service; and `start` / `call_tool`, which run an app's code on it."""

from __future__ import annotations

import uuid
import weakref
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeVar

from lineup.actors.kernel import ActorKind, ErrorCode, Identity, LineUpError, Message
from lineup.actors.kernel.acl import refusal
from lineup.facts.modes import NO_MODE, Mode, mode_at_birth

from .. import protocol as p
from .._app import AppContext, MiniApp
from ..schema import validate
from ..tools import AppInfo, ToolSpec, dispatch_tool, tools_of
from ._artifacts import FakeArtifacts
from ._capabilities import FakeCapabilities
from ._inbox import FakeConversation, FakeInbox
from ._interactions import FakeInteractions
from ._lifecycle import FakeLifecycle
from ._navigation import NAVIGATION_REQUESTS, FakeNavigation
from ._operations import FakeOperations
from ._registry import FakeRegistry
from ._session_data import FakeSessionData
from ._surfaces import FakeSurfaces, compact
from ._ui import FakeUi

__all__ = ["DEFAULT_INSTANCE", "CallRecord", "FakeRuntime", "call_tool", "start"]

M = TypeVar("M", bound=Message)
MAX_SETTLE_EVENTS: Final = 10_000  # an app that answers every update with a write never settles
DEFAULT_INSTANCE: Final = "instance-1"

_RUNTIMES: weakref.WeakKeyDictionary[MiniApp, FakeRuntime] = weakref.WeakKeyDictionary()


@dataclass
class CallRecord:
    """What happened to one tool call, updated as it happens (a later `complete` shows here)."""

    call_id: str
    tool: str
    instance_id: str
    progress: list[dict[str, Any]] = field(default_factory=list)
    result: dict[str, Any] | None = None
    error_code: str | None = None
    cancelled_reason: str | None = None
    error_message: str = ""
    output_schema: dict[str, Any] | None = None

    @property
    def status(self) -> Literal["running", "completed", "failed", "cancelled"]:
        if self.result is not None:
            return "completed"
        if self.cancelled_reason is not None:
            return "cancelled"
        return "failed" if self.error_code is not None else "running"

    @property
    def final(self) -> bool:
        return self.status != "running"


class FakeRuntime:
    """The runtime side of one MiniApp's channel, in memory: a `RuntimeChannel` for the
    `AppContext` services and a `ToolSink` for tool calls."""

    def __init__(self, app_scope: str = "test-app", instance_id: str = DEFAULT_INSTANCE) -> None:
        self.app_scope = app_scope
        self.instance_id = instance_id
        self.instances: set[str] = {instance_id}
        self.conversation = FakeConversation()
        self.inbox = FakeInbox(conversation=self.conversation)
        self.ui = FakeUi()
        self.lifecycle = FakeLifecycle()
        self.session_data = FakeSessionData()
        self.interactions = FakeInteractions()
        self.surfaces = FakeSurfaces()
        self.conversation_id: str | None = "conv-test"
        self.artifacts = FakeArtifacts()
        self.registry = FakeRegistry()
        self.capabilities = FakeCapabilities()
        self.navigation = FakeNavigation()
        self.operations = FakeOperations()  # deadline operations: `fire_operation` ends one
        # Each instance's state as focus reports it (`app.refresh`): `foreground` unless set,
        # e.g. `states[instance] = "background"` while the user looks at another app.
        self.states: dict[str, str] = {}
        # Each instance's mode as focus records it (an app with modes: the chat), and the
        # switches not yet told to the app (`settle` tells them, as `on_mode_changed`).
        born = mode_at_birth(app_scope)
        self.modes: dict[str, Mode] = {} if born is None else {instance_id: born}
        self._modes_untold: list[p.ModeChangedEvent] = []
        self.app: MiniApp | None = None  # the app `start` started, told of its interactions
        self.closed: set[str] = set()
        self.calls: dict[str, CallRecord] = {}
        self._refusals: dict[type[Message], list[ErrorCode]] = {}
        self._context: AppContext | None = None

    @property
    def _identity(self) -> Identity:
        """The app's channel identity, which the runtime's ACL reads."""
        return Identity(ActorKind.MINIAPP, f"miniapp:{self.app_scope}")

    def context(self) -> AppContext:
        """An `AppContext` whose services talk to this fake. The newest one is the running app's
        (an older one is a process that was replaced): `settle` tells it of updates."""
        self._context = AppContext(self, self.app_scope, self.instance_id)
        return self._context

    async def settle(self) -> None:
        """Tell the app what the runtime has told its process by now: its interactions' answers
        and ends (`on_interaction_updated`), and the session data updates of the instances it
        subscribed to, one at a time in revision order, through its context's `SessionData`
        (which calls the app's handlers). Raises `RuntimeError` if the
        app's handlers keep writing without end."""
        for _ in range(MAX_SETTLE_EVENTS):
            if self._modes_untold:
                switched = self._modes_untold.pop(0)
                if self._context is not None:
                    self._context._mode_changed(switched)
                if self.app is not None:
                    await self.app.on_mode_changed(switched)
                continue
            if self.operations.untold:
                ended = self.operations.untold.pop(0)
                if self.app is not None:
                    await self.app.on_operation_ended(ended)
                continue
            if self.surfaces.untold:
                closed = self.surfaces.untold.pop(0)
                if self.app is not None:
                    await self.app.on_surface_closed(closed)
                continue
            if self.interactions.untold:
                record = self.interactions.untold.pop(0)
                if self._context is not None:
                    self._context.ui._updated(record)
                if self.app is not None:
                    await self.app.on_interaction_updated(record)
                self.interactions._told(record)
                continue
            if not self.session_data.pending:
                return
            event = self.session_data.pending.pop(0)
            if self._context is not None:
                await self._context.session_data._updated(event)
        raise RuntimeError("session data updates never settled: a handler writes on every update")

    async def send_surface_event(
        self, name: str, data: dict[str, Any] | None = None, *, instance_id: str | None = None
    ) -> None:
        """The instance's open Surface sends the app an event (`on_surface_event`), checked as
        focus checks it: `surface_not_found` (none open), `bridge_method_unknown` (a name its
        entrypoint does not declare), `bridge_message_too_large`. Settles afterwards."""
        surface = self.surfaces.of(instance_id or self.instance_id)
        if surface is None:
            raise LineUpError(ErrorCode.SURFACE_NOT_FOUND, instance_id or self.instance_id)
        if name not in surface.events:
            raise LineUpError(ErrorCode.BRIDGE_METHOD_UNKNOWN, name)
        data = data or {}
        if len(compact(data).encode()) > p.MAX_SURFACE_EVENT_BYTES:
            raise LineUpError(ErrorCode.BRIDGE_MESSAGE_TOO_LARGE, name)
        event = p.SurfaceEvent(
            instance_id=surface.instance_id, surface_id=surface.surface_id, name=name, data=data
        )
        if self.app is not None:
            # As the bus carries it: JSON, never the test's own objects.
            await self.app.on_surface_event(
                p.SurfaceEvent.model_validate_json(event.model_dump_json())
            )
        await self.settle()

    async def deliver(self, *deliveries: p.Delivery) -> None:
        """Tell the app of deliveries its inbox holds (`inbox.put` makes them) as its process
        does: `on_deliveries`, then its `agent_messages` subscriptions. Raises what they raise
        (`handler_failed` for a subscription's handler); settles afterwards."""
        if self.app is not None:
            await self.app.on_deliveries(deliveries)
        if self._context is not None:
            await self._context.agent_messages.dispatch(deliveries)
        await self.settle()

    async def fire_operation(self, call_id: str) -> None:
        """The `ends_at` of the call's operation has come: the runtime submits its result and
        tells the app (`on_operation_ended`). Settles afterwards."""
        self.operations.fire(call_id, self)
        await self.settle()

    def refuse(self, request: type[Message], code: ErrorCode, times: int = 1) -> None:
        """Refuse the next `times` requests of this type with `code`."""
        self._refusals.setdefault(request, []).extend([code] * times)

    # ------------------------------------------------------------------ RuntimeChannel

    async def call(self, peer: str, request: Message, expect: type[M]) -> M:
        # The receiver's ACL first, as the bus checks it: a request reserved for other apps
        # (the user's text is the chat's, the registry the App Registry's) is refused.
        refused = refusal(self._identity, ActorKind(peer), request.TYPE)
        if refused is not None:
            raise LineUpError(refused, request.TYPE)
        refusals = self._refusals.get(type(request))
        if refusals:
            raise LineUpError(refusals.pop(0), request.TYPE)
        # As the bus carries it: JSON (NaN arrives as null), never the app's own objects.
        request = type(request).model_validate_json(request.model_dump_json())
        reply = self._answer(request)
        if not isinstance(reply, expect):
            raise LineUpError(ErrorCode.FRAME_MALFORMED, f"{request.TYPE} does not answer {expect}")
        return reply

    def _answer(self, request: Message) -> Message:
        artifact = self.artifacts.answer(request, self.app_scope, self.instances)
        if artifact is not None:
            return artifact
        operation = self.operations.answer(request, self)
        if operation is not None:
            return operation
        if isinstance(request, p.CapabilityRequest):
            return self.capabilities._answer(request, self.instances)
        if isinstance(request, p.InboxListRequest):
            return self.inbox._list(request)
        if isinstance(request, p.InboxAckRequest):
            return self.inbox._ack(request)
        if isinstance(request, p.InboxAckManyRequest):
            return self.inbox._ack_many(request)
        if isinstance(request, p.ConversationSendTextRequest):
            return self.conversation._send(request)
        if isinstance(request, p.ConversationRetryRequest):
            return self.conversation._retry(request)
        if isinstance(request, p.ConversationHistoryRequest):
            return self.conversation._history(request)
        if isinstance(request, p.ViewUpdateRequest | p.ViewItemsPutRequest):
            return self.ui._answer(request, self.instances, self.app_scope)
        if isinstance(request, p.LifecycleRequest):
            return self._lifecycle(request)
        if isinstance(request, p.ModeSwitchRequest):
            return self._switch_mode(request)
        if isinstance(request, p.SessionDataGetRequest):
            self._live(request.instance_id)
            return self.session_data._snapshot(request.instance_id)
        if isinstance(request, p.SessionDataReplaceRequest):
            self._live(request.instance_id)
            return self.session_data._replace(request)
        if isinstance(request, p.SessionDataSubscribeRequest):
            self._live(request.instance_id)
            return self.session_data._subscribe(request)
        if isinstance(request, p.InteractionAskRequest):
            if request.instance_id not in self.instances:
                raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, request.instance_id)
            if request.parent_call_id is not None:
                parent = self.calls.get(request.parent_call_id)
                if parent is None or parent.instance_id != request.instance_id:
                    raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, request.parent_call_id)
                if parent.final:
                    raise LineUpError(ErrorCode.CALL_ALREADY_FINAL, request.parent_call_id)
            return self.interactions._ask(request, self.app_scope)
        if isinstance(request, p.InteractionGetRequest):
            return p.InteractionReceipt(
                interaction=self.interactions._own(request.interaction_id), changed=False
            )
        if isinstance(request, p.InteractionCancelRequest):
            before = self.interactions._own(request.interaction_id)
            after = self.interactions.end(request.interaction_id, "cancelled", request.reason)
            return p.InteractionReceipt(interaction=after, changed=after is not before)
        if isinstance(
            request, p.SurfaceOpenRequest | p.SurfaceUpdateRequest | p.SurfaceCloseRequest
        ):
            return self._surface(request)
        if isinstance(request, p.RegistryListRequest):
            return self.registry._list()
        if isinstance(request, NAVIGATION_REQUESTS):
            return self.navigation._answer(request, self)
        if isinstance(request, p.ContextRequest):
            if request.instance_id not in self.instances:
                raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, request.instance_id)
            return p.ContextReply(
                app_scope=self.app_scope,
                instance_id=request.instance_id,
                conversation_id=self.conversation_id,
                state=self.states.get(request.instance_id, "foreground"),
                mode=self.modes.get(request.instance_id, NO_MODE),
            )
        raise LineUpError(ErrorCode.NO_HANDLER, request.TYPE)

    def _surface(
        self, request: p.SurfaceOpenRequest | p.SurfaceUpdateRequest | p.SurfaceCloseRequest
    ) -> p.SurfaceReply:
        if isinstance(request, p.SurfaceUpdateRequest):
            return self.surfaces._update(request)
        if isinstance(request, p.SurfaceCloseRequest):
            return self.surfaces._close(request)
        if request.instance_id not in self.instances:
            raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, request.instance_id)
        info = getattr(type(self.app), "app_info", None)
        return self.surfaces._open(request, info.entrypoints if isinstance(info, AppInfo) else ())

    def _owned(self, instance_id: str) -> None:
        """Focus answers only for the app's own instances: another app's (or one never opened)
        is `app_scope_mismatch`."""
        if instance_id not in self.instances and instance_id not in self.closed:
            raise LineUpError(ErrorCode.APP_SCOPE_MISMATCH, instance_id)

    def _live(self, instance_id: str) -> None:
        """One of the app's own instances, still open: an ended one is not found (its
        session data ended with it), another app's is not the app's to name."""
        self._owned(instance_id)
        if instance_id not in self.instances:
            raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, instance_id)

    def _switch_mode(self, request: p.ModeSwitchRequest) -> p.CommandReceipt:
        """Focus's record of a switch: `invalid_arguments` for an app without modes; the app
        is told at the next `settle`, unless the mode was the one recorded."""
        self._live(request.instance_id)
        if mode_at_birth(self.app_scope) is None:
            raise LineUpError(ErrorCode.INVALID_ARGUMENTS, request.instance_id)
        if self.modes.get(request.instance_id) != request.mode:
            self.modes[request.instance_id] = request.mode
            self._modes_untold.append(
                p.ModeChangedEvent(instance_id=request.instance_id, mode=request.mode)
            )
        return p.CommandReceipt(id=request.instance_id)

    def _lifecycle(self, request: p.LifecycleRequest) -> p.CommandReceipt:
        self._live(request.instance_id)
        if request.action == "close":
            self.instances.discard(request.instance_id)
            self.closed.add(request.instance_id)
            self.surfaces._ended(request.instance_id)
        self.lifecycle.requests.append((request.instance_id, request.action))
        return p.CommandReceipt(id=request.instance_id)

    # ------------------------------------------------------------------ ToolSink

    def _record(self, call_id: str) -> CallRecord:
        record = self.calls.get(call_id)
        if record is None:  # a call dispatched directly, not through call_tool
            record = self.calls[call_id] = CallRecord(call_id, "", self.instance_id)
        return record

    def _open(self, call_id: str) -> CallRecord:
        record = self._record(call_id)
        if record.final:
            raise LineUpError(ErrorCode.CALL_ALREADY_FINAL, call_id)
        return record

    def _ending(self, call_id: str) -> CallRecord:
        """An open call the app may end: not one whose end a deadline operation owns."""
        record = self._open(call_id)
        if self.operations.owns(call_id):
            raise LineUpError(ErrorCode.PERMISSION_DENIED, call_id)
        return record

    async def progress(self, call_id: str, progress: dict[str, Any]) -> None:
        self._open(call_id).progress.append(progress)

    async def complete(self, call_id: str, result: dict[str, Any]) -> None:
        record = self._ending(call_id)
        if record.output_schema is not None and validate(record.output_schema, result):
            raise LineUpError(ErrorCode.TOOL_OUTPUT_INVALID, call_id)
        record.result = result

    async def fail(self, call_id: str, code: str, message: str = "") -> None:
        record = self._ending(call_id)
        record.error_code = code
        record.error_message = message

    async def cancel(self, call_id: str, reason: str) -> None:
        self._ending(call_id).cancelled_reason = reason


async def start(
    app: MiniApp,
    *,
    runtime: FakeRuntime | None = None,
    app_scope: str | None = None,
    instance_id: str = DEFAULT_INSTANCE,
) -> FakeRuntime:
    """Call `app.start` with an `AppContext` on a `FakeRuntime` (given, or a new one whose
    scope is the app's `app_info.app_scope`). Later `call_tool(app, ...)` use the same fake."""
    if runtime is None:
        runtime = FakeRuntime(app_scope or _scope_of(app), instance_id)
    _RUNTIMES[app] = runtime
    runtime.app = app
    info = getattr(type(app), "app_info", None)
    if info is not None and runtime.capabilities.declared is None:
        runtime.capabilities.declared = frozenset(info.requested_capabilities)
    await app.start(runtime.context())
    await runtime.settle()
    return runtime


async def call_tool(
    app: MiniApp,
    tool_id: str,
    input: dict[str, Any],
    *,
    call_id: str | None = None,
    runtime: FakeRuntime | None = None,
) -> CallRecord:
    """Run one call of `tool_id` on `app` through `dispatch_tool`, as the runtime would after
    admitting it. Returns the call's record (still `running` if the handler completes later).
    Raises `tool_not_advertised` if the app declares no such tool."""
    spec: ToolSpec | None = tools_of(type(app)).get(tool_id)
    if spec is None:
        raise LineUpError(ErrorCode.TOOL_NOT_ADVERTISED, tool_id)
    if runtime is None:
        runtime = _RUNTIMES.get(app) or FakeRuntime(_scope_of(app))
        _RUNTIMES[app] = runtime
    call_id = call_id or str(uuid.uuid4())
    if call_id in runtime.calls:
        raise LineUpError(ErrorCode.INVALID_ARGUMENTS, f"call_id {call_id} already used")
    record = runtime.calls[call_id] = CallRecord(
        call_id, tool_id, runtime.instance_id, output_schema=spec.descriptor.output_schema
    )
    await dispatch_tool(app, spec, call_id, tool_id, runtime.instance_id, input, runtime)
    await runtime.settle()
    return record


def _scope_of(app: MiniApp) -> str:
    info = getattr(type(app), "app_info", None)
    return info.app_scope if isinstance(info, AppInfo) else "test-app"
