"""A MiniApp that walks the SDK of seed 004 §6 (issue 29, item 1), to prove each part through the
real tree (tests/e2e/test_navigation.py): its context (§6.1), its state view and subscription,
navigation (`list_available`, `launch`, `focus`, `close`, `open_default_app`), declarative
actions and diagnostics. Its one tool runs a script of SDK calls and answers what each got —
a value, or the code of its refusal — as `steps`, in order, which the test reads at the Agent.

Its Surface (`web/`, entrypoint `panel`) drives the same parts through the Surface bridge for
the browser test (tests/browser/test_surface_navigation.py).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Final, Literal

import trio
from pydantic import BaseModel, ConfigDict, Field

from lineup.sdk import AppContext, AppInfo, LineUpError, MiniApp, ToolCall, tool
from lineup.sdk import protocol as p
from lineup.sdk.manifest import Entrypoint

__all__ = ["SECRET", "NavApp"]

# Text the app puts in a diagnostics report's message: the test looks for it in the audit.
SECRET: Final = "the-user-typed-this-secret"
WAIT: Final = 10.0


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class NavInput(_Model):
    mode: Literal["tour", "diagnostics", "surface", "watch", "launch_and_see"]
    other: str | None = Field(default=None, max_length=200)  # another app's live instance


class Step(_Model):
    name: str = Field(max_length=100)
    value: str = Field(max_length=2000)


class NavOutput(_Model):
    steps: tuple[Step, ...]


class NavApp(MiniApp):
    app_info = AppInfo(
        app_scope="navigator",
        title="Navigator",
        version="1.0.0",
        kind="bundled-reference",
        requested_capabilities=("notification.show",),
        entrypoints=(
            Entrypoint(id="panel", kind="surface", document="index.html", default_eligible=True),
        ),
    )

    async def start(self, app: AppContext) -> None:
        self.app = app
        self.views: list[p.AppStateView] = []
        self.told = trio.Event()  # set at each view the subscription is told

    @tool("navigator.run", handling="launch", input=NavInput, output=NavOutput, timeout_ms=60_000)
    async def run(self, call: ToolCall[NavInput]) -> NavOutput:
        steps: list[Step] = []

        async def step(name: str, action: Callable[[], Awaitable[Any]]) -> Any:
            try:
                got = await action()
            except LineUpError as exc:
                steps.append(Step(name=name, value=f"!{exc.code.value}"))
                return None
            steps.append(Step(name=name, value=_shown(got)))
            return got

        if call.input.mode == "watch":  # subscribe to the state view, and keep what it tells
            await step("subscribe", _subscribe(self.app, self._listen))
            return NavOutput(steps=tuple(steps))
        if call.input.mode == "launch_and_see":  # launch behind; wait until the view shows it
            board = await self.app.apps.launch(
                "whiteboard", call.call_id, display_mode="background"
            )
            await step("seen", lambda: self._until(board.instance_id))
            return NavOutput(steps=tuple(steps))
        if call.input.mode == "surface":
            await self.app.surfaces.request_open(call.instance_id, entrypoint="panel")
            return NavOutput(steps=())
        if call.input.mode == "diagnostics":
            await self._diagnostics(call.instance_id, step)
            return NavOutput(steps=tuple(steps))
        await self._tour(call, step)
        return NavOutput(steps=tuple(steps))

    async def _tour(self, call: ToolCall[NavInput], step: Any) -> None:
        app, me, other = self.app, call.instance_id, call.input.other or "none"

        context = await app.refresh(me)
        steps_context = {
            "kind": context.kind,
            "entrypoint": str(context.entrypoint),
            "conversation": str(context.scope.conversation_id),
            "parent": str(context.scope.parent_instance_id),
            "granted": ",".join(context.granted_permissions),
        }
        await step("context", _value(steps_context))
        await step("context_other", lambda: app.refresh(other))
        await step("report_other", lambda: app.diagnostics.report("ok", instance_id=other))
        await step("available", _listing(app))
        await step("subscribe", _subscribe(app, self._listen))
        board = await step(
            "launch_background",
            lambda: app.apps.launch("whiteboard", "r1", display_mode="background"),
        )
        board_id = board.instance_id if board is not None else "none"
        await step(
            "launch_again", lambda: app.apps.launch("whiteboard", "r1", display_mode="background")
        )
        await step("no_entrypoint", lambda: app.apps.launch("whiteboard", "r2", entrypoint="nope"))
        await step("no_app", lambda: app.apps.launch("no-such-app", "r3"))
        await step(
            "other_conversation",
            lambda: app.apps.launch("whiteboard", "r4", conversation_id="another-conversation"),
        )
        await step("snapshot", _snapshot(app))
        await step("focus_launched", lambda: app.apps.focus(board_id))
        await step("launch_from_behind", lambda: app.apps.launch("task-dashboard", "r5"))
        await step("focus_own", lambda: app.apps.focus(me))
        await step("focus_other", lambda: app.apps.focus(other))
        await step("close_other", lambda: app.apps.close(other))
        await step("close_chat", lambda: app.apps.close("chat"))
        await step(
            "dispatch_close",
            lambda: app.actions.dispatch({"kind": "apps.close", "instance_id": board_id}),
        )
        await step(
            "dispatch_send_text",
            lambda: app.actions.dispatch(
                {"kind": "conversation.send_text", "message_id": "m1", "markdown": "hi"}
            ),
        )
        await step(
            "dispatch_envelope",
            lambda: app.actions.dispatch({"kind": "agent.envelope", "payload": {}}),
        )
        await step(
            "dispatch_lifecycle_other",
            lambda: app.actions.dispatch({"kind": "lifecycle.close", "instance_id": other}),
        )
        await step("launched_seen", lambda: self._until_gone(board_id))
        await step("open_default", app.apps.open_default_app)
        await step("open_default_behind", app.apps.open_default_app)

    async def _listen(self, view: p.AppStateView, change: Any) -> None:
        self.views.append(view)
        self.told.set()

    async def _until(self, instance_id: str) -> str:
        """Once a view the subscription was told shows `instance_id` among those launched."""
        with trio.fail_after(WAIT):
            while not any(i.instance_id == instance_id for v in self.views for i in v.launched):
                self.told = trio.Event()
                await self.told.wait()
        return "launched"

    async def _until_gone(self, board: str) -> str:
        """Once the subscription was told a view without the closed board (its close is
        pushed after the close's receipt): whether an earlier view showed it."""
        with trio.fail_after(WAIT):
            while not _seen_launched(self.views, board).endswith("went=True"):
                self.told = trio.Event()
                await self.told.wait()
        return _seen_launched(self.views, board)

    async def _diagnostics(self, me: str, step: Any) -> None:
        app = self.app
        await step(
            "report",
            lambda: app.diagnostics.report("degraded", code="render_slow", message=SECRET),
        )
        view = await app.state.snapshot()
        own = next(i for i in view.instances if i.instance_id == me)
        await step("health_seen", _value({"health": own.health}))
        codes = []
        for _ in range(p.MAX_REPORTS + 1):
            try:
                await app.diagnostics.report("ok")
                codes.append("ok")
            except LineUpError as exc:
                codes.append(exc.code.value)
        await step("flood", _value({"last": codes[-1], "ok": str(codes.count("ok"))}))


def _shown(got: Any) -> str:
    if isinstance(got, p.AppInstanceHandle):
        return f"{got.app_scope}|{got.state}|{got.entrypoint}|{got.parent_instance_id}"
    if isinstance(got, p.CommandReceipt):
        return f"receipt:{got.id}"
    if got is None:
        return "none"
    return str(got)


def _value(values: dict[str, str]) -> Callable[[], Awaitable[str]]:
    return lambda: _async(";".join(f"{k}={v}" for k, v in values.items()))


async def _async(value: Any) -> Any:
    return value


def _listing(app: AppContext) -> Callable[[], Awaitable[str]]:
    async def listing() -> str:
        apps = await app.apps.list_available()
        return ",".join(f"{a.app_scope}:{a.kind}{'*' if a.is_default else ''}" for a in apps)

    return listing


def _subscribe(app: AppContext, listen: Any) -> Callable[[], Awaitable[str]]:
    async def subscribe() -> str:
        await app.state.subscribe(listen)
        return "subscribed"

    return subscribe


def _snapshot(app: AppContext) -> Callable[[], Awaitable[str]]:
    async def snapshot() -> str:
        view = await app.state.snapshot()
        own = ",".join(f"{i.state}" for i in view.instances)
        launched = ",".join(
            f"{i.app_scope}:{i.state}:{i.entrypoint}:{i.parent_instance_id}" for i in view.launched
        )
        return f"front={view.in_front};own={own};launched={launched}"

    return snapshot


def _seen_launched(views: list[p.AppStateView], board: str) -> str:
    """Whether a view the subscription was told showed the launched board, then one without."""
    shown = [any(i.instance_id == board for i in v.launched) for v in views]
    came = shown.index(True) if True in shown else -1
    went = came >= 0 and False in shown[came:]
    return f"came={came >= 0};went={went}"
