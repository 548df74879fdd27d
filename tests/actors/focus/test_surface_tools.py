"""A UI-linked tool's calls in the focus actor (`actors/focus/_surface_tools.py`): the router's
steps shown on the instance's Surface, and the Surface's own `tools/call` checked, run by its
app and answered as a CallToolResult — against the in-memory bus of test_surfaces.py."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, ClassVar

import pytest
import trio
import trio.testing

from lineup.actors.focus import FocusActor
from lineup.actors.focus._surface_tools import UI_CALLS_PER_WINDOW
from lineup.actors.focus._surfaces import surface_id_of
from lineup.actors.focus.messages import (
    SurfaceToolCallRequest,
    SurfaceToolStepRequest,
    ViewsRequest,
)
from lineup.actors.kernel import ErrorCode, Message
from lineup.hostbridge.messages import SurfaceToolProgressEvent
from lineup.sdk import protocol as p
from lineup.sdk.manifest import Manifest, ToolDescriptor
from lineup.sdk.mcp_apps import CONTENT_SCHEMA, call_tool_error

from .test_surfaces import (
    BOARD,
    INSTANCE,
    SCOPE,
    FakeBus,
    code_of,
    focus_with,
    from_app,
    from_bridge,
)
from .test_surfaces import manifest as surface_manifest

SID = surface_id_of(INSTANCE)
INPUT = {
    "type": "object",
    "properties": {"n": {"type": "integer"}},
    "required": ["n"],
    "additionalProperties": False,
}
OUTPUT = {
    "type": "object",
    "properties": {"time": {"type": "string"}},
    "required": ["time"],
    "additionalProperties": False,
}


def tool(method: str, visibility: tuple[str, ...]) -> ToolDescriptor:
    return ToolDescriptor.model_validate(
        {"method": method, "handling": "direct", "input_schema": INPUT, "output_schema": OUTPUT,
         "ui": {"entrypoint": "board", "visibility": visibility}}
    )  # fmt: skip


# An MCP server's tool: its input schema in 2020-12 as the server wrote it, no output schema.
MCP_TOOL = ToolDescriptor.model_validate(
    {"method": "surf.mcp-time", "handling": "direct", "delivery": "mcp",
     "input_schema": {"$schema": "https://json-schema.org/draft/2020-12/schema",
                      "type": "object", "properties": {}, "additionalProperties": False},
     "output_schema": CONTENT_SCHEMA, "ui": {"entrypoint": "board"}}
)  # fmt: skip


def app_manifest() -> Manifest:
    base = surface_manifest(BOARD).model_dump(mode="json")
    base["tools"] = [
        tool("surf.get-time", ("model", "app")).model_dump(mode="json"),
        tool("surf.agent-only", ("model",)).model_dump(mode="json"),
        MCP_TOOL.model_dump(mode="json"),
    ]
    return Manifest.model_validate(base)


class AnsweringBus(FakeBus):
    """The in-memory bus, whose app, told a Surface's request (`asks`), tells focus `answer`
    back (`_done`: the outcome, or a code); `silent`, it never does; with `hold`, once set."""

    asks: ClassVar[type[Message]]

    def __init__(self, answer: dict[str, Any]) -> None:
        super().__init__()
        self.answer = answer
        self.asked: list[Any] = []
        self.hold: trio.Event | None = None  # set: the app answers only once it is
        self.silent = False
        self.focus: FocusActor | None = None
        self.nursery: trio.Nursery | None = None

    async def tell(self, peer: str, body: Message, **options: Any) -> ErrorCode | None:
        if not isinstance(body, self.asks):
            return await super().tell(peer, body, **options)
        assert peer == f"miniapp:{SCOPE}"
        if peer in self.down:
            return ErrorCode.ACTOR_UNAVAILABLE
        self.asked.append(body)
        if not self.silent:
            assert self.nursery is not None
            self.nursery.start_soon(self._answer, body)
        return None

    async def _answer(self, asked: Any) -> None:
        if self.hold is not None:
            await self.hold.wait()
        assert self.focus is not None
        await self._done(self.focus, asked)

    async def _done(self, focus: FocusActor, asked: Any) -> None:
        raise NotImplementedError


class AppBus(AnsweringBus):
    """Its app, told a Surface's tool call, tells focus `answer` (the result, or a code) as its
    outcome."""

    asks = p.UiToolCallEvent

    def __init__(self) -> None:
        super().__init__({"result": {"time": "12:00"}})

    async def _done(self, focus: FocusActor, asked: p.UiToolCallEvent) -> None:
        done = p.UiToolCallDoneRequest(call_id=asked.call_id, **self.answer)
        await focus.on_surface_tool_done(done, from_app(done))


@pytest.fixture
async def world() -> AsyncIterator[tuple[FocusActor, AppBus]]:
    bus = AppBus()
    focus = focus_with(bus, app_manifest())
    async with trio.open_nursery() as nursery:
        focus.port.nursery = nursery
        bus.focus, bus.nursery = focus, nursery
        yield focus, bus
        nursery.cancel_scope.cancel()


def step(kind: str, **fields: Any) -> SurfaceToolStepRequest:
    return SurfaceToolStepRequest(
        app_scope=SCOPE,
        instance_id=INSTANCE,
        call_id="c-1",
        entrypoint="board",
        step=kind,
        **fields,
    )


def view_of(focus: FocusActor) -> dict[str, Any]:
    views = focus.on_views(ViewsRequest(), from_bridge(ViewsRequest()))
    [view] = [v.view for v in views.views if v.instance_id == INSTANCE]
    return view


async def test_a_calls_steps_open_the_surface_and_give_it_the_outcome_once(
    world: tuple[FocusActor, AppBus],
) -> None:
    focus, _ = world
    info = {"id": "c-1", "tool": {"name": "surf.get-time"}}
    opened = step("input", tool_input={"n": 1}, tool_info=info)
    assert focus.on_surface_tool_step(opened, from_bridge(opened)).shown
    view = view_of(focus)
    assert (view["surface_id"], view["tool_input"], view["tool_info"]) == (SID, {"n": 1}, info)
    done = step("cancelled", reason="app_closed")
    assert focus.on_surface_tool_step(done, from_bridge(done)).shown
    assert view_of(focus)["call_cancelled"] == "app_closed"
    late = step("result", result={"isError": False})
    assert not focus.on_surface_tool_step(late, from_bridge(late)).shown
    gone = step("input").model_copy(update={"instance_id": "surf:none"})
    assert not focus.on_surface_tool_step(gone, from_bridge(gone)).shown


async def open_surface(focus: FocusActor) -> None:
    opened = step("input", tool_input={"n": 1}, tool_info={"id": "c-1"})
    focus.on_surface_tool_step(opened, from_bridge(opened))


def call(name: str = "get-time", arguments: dict[str, Any] | None = None) -> SurfaceToolCallRequest:
    return SurfaceToolCallRequest(
        instance_id=INSTANCE, surface_id=SID, name=name, arguments=arguments or {"n": 1}
    )


async def test_the_surfaces_call_by_the_specs_bare_name_is_run_by_its_app_and_answered(
    world: tuple[FocusActor, AppBus],
) -> None:
    focus, bus = world
    await open_surface(focus)
    for name in ("get-time", "surf.get-time"):
        reply = await focus.on_surface_tool_call(call(name), from_bridge(call(name)))
        assert reply.result["structuredContent"] == {"time": "12:00"}
        assert reply.result["isError"] is False
    assert [(a.tool, a.instance_id, a.input) for a in bus.asked] == [
        ("surf.get-time", INSTANCE, {"n": 1})
    ] * 2
    assert len({a.call_id for a in bus.asked}) == 2
    called = [r for r in bus.audits if r.event == "focus.surface_tool_called"]
    assert [(r.code, r.message_type) for r in called] == [(None, "surf.get-time")] * 2


async def test_an_mcp_servers_tool_is_checked_by_its_json_schema_and_answers_its_content(
    world: tuple[FocusActor, AppBus],
) -> None:
    focus, bus = world
    await open_surface(focus)
    content = [{"type": "text", "text": "12:00"}]
    bus.answer = {"result": {"content": content}}  # as `mcp_server.result_of` maps it
    asked = call("mcp-time").model_copy(update={"arguments": {}})
    reply = await focus.on_surface_tool_call(asked, from_bridge(asked))
    # The server's own content, as it gave it: not the result as JSON text.
    assert reply.result == {"content": content, "isError": False}
    wrong = call("mcp-time", {"n": 1})
    refused = await code_of(lambda: focus.on_surface_tool_call(wrong, from_bridge(wrong)))
    assert refused is ErrorCode.TOOL_INPUT_INVALID


async def test_an_apps_failure_or_a_result_off_its_schema_is_an_error_result(
    world: tuple[FocusActor, AppBus],
) -> None:
    focus, bus = world
    await open_surface(focus)
    bus.answer = {"code": "handler_failed"}
    failed = await focus.on_surface_tool_call(call(), from_bridge(call()))
    assert failed.result == call_tool_error("handler_failed")
    bus.answer = {"result": {"time": 12}}
    off = await focus.on_surface_tool_call(call(), from_bridge(call()))
    assert off.result["isError"] is True and "structuredContent" not in off.result
    assert off.result["content"][0]["text"] == "tool_output_invalid"


@pytest.mark.parametrize(
    ("request_", "code"),
    [
        (call("nothing"), ErrorCode.TOOL_NOT_ADVERTISED),
        (call("agent-only"), ErrorCode.TOOL_NOT_VISIBLE),
        (call(arguments={"n": "one"}), ErrorCode.TOOL_INPUT_INVALID),
        (call().model_copy(update={"surface_id": "lu:surface:other"}), ErrorCode.SURFACE_NOT_FOUND),
        (call().model_copy(update={"instance_id": "surf:none"}), ErrorCode.APP_INSTANCE_NOT_FOUND),
    ],
)
async def test_a_surfaces_call_that_fails_a_check_is_refused_audited_and_never_run(
    world: tuple[FocusActor, AppBus], request_: SurfaceToolCallRequest, code: ErrorCode
) -> None:
    focus, bus = world
    await open_surface(focus)
    refused = await code_of(lambda: focus.on_surface_tool_call(request_, from_bridge(request_)))
    assert refused is code
    assert bus.asked == []
    assert [(r.message_type, r.code) for r in bus.audits if r.event == "focus.surface_refused"] == [
        ("focus.ui.surface.tool_call", code.value)
    ]


async def test_a_surfaces_calls_past_their_rate_are_refused_rate_limited(
    world: tuple[FocusActor, AppBus],
) -> None:
    focus, bus = world
    await open_surface(focus)
    for _ in range(UI_CALLS_PER_WINDOW):
        await focus.on_surface_tool_call(call(), from_bridge(call()))
    refused = await code_of(lambda: focus.on_surface_tool_call(call(), from_bridge(call())))
    assert refused is ErrorCode.RATE_LIMITED
    assert len(bus.asked) == UI_CALLS_PER_WINDOW


async def test_a_running_calls_progress_goes_to_the_hostbridge_that_asked_and_no_other_apps(
    world: tuple[FocusActor, AppBus],
) -> None:
    focus, bus = world
    await open_surface(focus)
    bus.hold = trio.Event()
    asked = call().model_copy(update={"request_id": "s1-page-3"})
    async with trio.open_nursery() as nursery:
        nursery.start_soon(focus.on_surface_tool_call, asked, from_bridge(asked))
        await trio.testing.wait_all_tasks_blocked()
        [running] = bus.asked
        report = p.UiToolProgressRequest(call_id=running.call_id, progress={"done": 1, "total": 3})
        assert (await focus.on_surface_tool_progress(report, from_app(report))).changed
        other = from_app(report, "other")
        refused = await code_of(lambda: focus.on_surface_tool_progress(report, other))
        assert refused is ErrorCode.APP_SCOPE_MISMATCH
        bus.hold.set()
    await trio.testing.wait_all_tasks_blocked()
    [told] = bus.of(SurfaceToolProgressEvent, "hostbridge")
    assert (told.request_id, told.instance_id, told.surface_id) == ("s1-page-3", INSTANCE, SID)
    assert told.progress == {"progress": 1, "total": 3}
    late = await focus.on_surface_tool_progress(report, from_app(report))
    assert not late.changed  # the call is over: dropped


async def test_an_app_that_never_tells_the_outcome_is_deadline_exceeded_and_a_late_one_dropped(
    world: tuple[FocusActor, AppBus], autojump_clock: trio.testing.MockClock
) -> None:
    # Focus tells the app and waits for its word (never asks it: tests/test_graphs.py).
    focus, bus = world
    await open_surface(focus)
    bus.silent = True
    refused = await code_of(lambda: focus.on_surface_tool_call(call(), from_bridge(call())))
    assert refused is ErrorCode.DEADLINE_EXCEEDED
    [told] = bus.asked
    late = p.UiToolCallDoneRequest(call_id=told.call_id, result={"time": "12:00"})
    assert not (await focus.on_surface_tool_done(late, from_app(late))).changed
    bus.down.add(f"miniapp:{SCOPE}")
    unreachable = await code_of(lambda: focus.on_surface_tool_call(call(), from_bridge(call())))
    assert unreachable is ErrorCode.ACTOR_UNAVAILABLE


async def test_only_the_calls_own_app_may_tell_its_outcome(
    world: tuple[FocusActor, AppBus],
) -> None:
    focus, bus = world
    await open_surface(focus)
    bus.hold = trio.Event()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(focus.on_surface_tool_call, call(), from_bridge(call()))
        await trio.testing.wait_all_tasks_blocked()
        [running] = bus.asked
        forged = p.UiToolCallDoneRequest(call_id=running.call_id, result={"time": "13:00"})
        refused = await code_of(lambda: focus.on_surface_tool_done(forged, from_app(forged, "x")))
        assert refused is ErrorCode.APP_SCOPE_MISMATCH
        assert [r.code for r in bus.audits if r.event == "focus.surface_refused"] == [
            "app_scope_mismatch"
        ]
        bus.hold.set()
