"""A Surface's `resources/read` of its MCP app's server's resource in the focus actor
(`actors/focus/_surface_tools.py`): checked (its open Surface, an app of kind `mcp`, enabled,
the calls' rate), told to its app, and answered with what the app tells back, checked again;
against the in-memory bus of test_surfaces.py."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
import trio.testing

from lineup.actors.focus import FocusActor
from lineup.actors.focus._surface_tools import UI_CALLS_PER_WINDOW
from lineup.actors.focus.messages import SurfaceResourceReadRequest
from lineup.actors.kernel import ErrorCode
from lineup.sdk import protocol as p
from lineup.sdk.manifest import Manifest
from lineup.sdk.mcp_apps import MAX_LIVE_RESOURCE_BYTES

from .test_surface_tools import SID, AnsweringBus, app_manifest, open_surface
from .test_surfaces import INSTANCE, code_of, focus_with, from_app, from_bridge

NOTE = {"uri": "data://x/note", "mimeType": "text/plain", "text": "live"}


def mcp_manifest() -> Manifest:
    base = app_manifest().model_dump(mode="json")
    base.update(kind="mcp", mcp={"command": ["server"]})
    return Manifest.model_validate(base)


class ServerBus(AnsweringBus):
    """Its MCP app, told a Surface's read, tells focus `answer` (the contents, or a code)."""

    asks = p.UiResourceReadEvent

    def __init__(self) -> None:
        super().__init__({"contents": (NOTE,)})

    async def _done(self, focus: FocusActor, asked: p.UiResourceReadEvent) -> None:
        done = p.UiResourceReadDoneRequest(read_id=asked.read_id, **self.answer)
        await focus.on_surface_resource_done(done, from_app(done))


@asynccontextmanager
async def _world(manifest: Manifest) -> AsyncIterator[tuple[FocusActor, ServerBus]]:
    bus = ServerBus()
    focus = focus_with(bus, manifest)
    async with trio.open_nursery() as nursery:
        focus.port.nursery = nursery
        bus.focus, bus.nursery = focus, nursery
        await open_surface(focus)
        yield focus, bus
        nursery.cancel_scope.cancel()


@pytest.fixture
async def world() -> AsyncIterator[tuple[FocusActor, ServerBus]]:
    async with _world(mcp_manifest()) as made:
        yield made


def read(uri: str = NOTE["uri"], **fields: Any) -> SurfaceResourceReadRequest:
    asked: dict[str, Any] = {"instance_id": INSTANCE, "surface_id": SID, "uri": uri}
    return SurfaceResourceReadRequest(**{**asked, **fields})


def audited(bus: ServerBus, event: str) -> list[tuple[str | None, str | None]]:
    return [(r.message_type, r.code) for r in bus.audits if r.event == event]


async def test_a_surfaces_read_is_its_servers_answer_told_by_its_app(
    world: tuple[FocusActor, ServerBus],
) -> None:
    focus, bus = world
    reply = await focus.on_surface_resource_read(read(), from_bridge(read()))
    assert reply.contents == (NOTE,)
    assert [(a.uri, a.instance_id) for a in bus.asked] == [(NOTE["uri"], INSTANCE)]
    assert audited(bus, "focus.surface_resource_read") == [("focus.ui.surface.resource_read", None)]
    assert not [a for a in bus.audits if "data://" in a.model_dump_json()]  # never the URI


@pytest.mark.parametrize(
    ("answer", "code"),
    [
        ({"code": "resource_not_found"}, ErrorCode.RESOURCE_NOT_FOUND),
        ({"contents": ({"uri": "u", "text": "y" * MAX_LIVE_RESOURCE_BYTES},)},
         ErrorCode.RESOURCE_TOO_LARGE),
        ({"contents": ({"uri": "u", "text": "a", "blob": "YQ=="},)}, ErrorCode.HANDLER_FAILED),
        ({"contents": ({"text": "a"},)}, ErrorCode.HANDLER_FAILED),
        ({}, ErrorCode.HANDLER_FAILED),
    ],
    ids=["servers-error", "too-large", "text-and-blob", "no-uri", "nothing"],
)  # fmt: skip
async def test_what_the_app_tells_is_checked_again_and_a_failure_is_its_code(
    world: tuple[FocusActor, ServerBus], answer: dict[str, Any], code: ErrorCode
) -> None:
    focus, bus = world
    bus.answer = answer
    refused = await code_of(lambda: focus.on_surface_resource_read(read(), from_bridge(read())))
    assert refused is code
    assert audited(bus, "focus.surface_resource_read") == [
        ("focus.ui.surface.resource_read", code.value)
    ]


async def test_an_app_not_of_kind_mcp_has_no_server_to_read_and_is_never_told() -> None:
    async with _world(app_manifest()) as (focus, bus):
        refused = await code_of(lambda: focus.on_surface_resource_read(read(), from_bridge(read())))
        assert refused is ErrorCode.RESOURCE_NOT_FOUND
        assert bus.asked == []
        assert audited(bus, "focus.surface_refused") == [
            ("focus.ui.surface.resource_read", "resource_not_found")
        ]


@pytest.mark.parametrize(
    ("request_", "code"),
    [
        (read(surface_id="lu:surface:other"), ErrorCode.SURFACE_NOT_FOUND),
        (read(instance_id="surf:none"), ErrorCode.APP_INSTANCE_NOT_FOUND),
    ],
)
async def test_a_read_that_fails_a_check_is_refused_audited_and_never_told(
    world: tuple[FocusActor, ServerBus], request_: SurfaceResourceReadRequest, code: ErrorCode
) -> None:
    focus, bus = world
    refused = await code_of(lambda: focus.on_surface_resource_read(request_, from_bridge(request_)))
    assert refused is code
    assert bus.asked == []
    assert audited(bus, "focus.surface_refused") == [("focus.ui.surface.resource_read", code.value)]


async def test_reads_share_the_rate_of_the_surfaces_calls(
    world: tuple[FocusActor, ServerBus],
) -> None:
    focus, bus = world
    for _ in range(UI_CALLS_PER_WINDOW):
        await focus.on_surface_resource_read(read(), from_bridge(read()))
    refused = await code_of(lambda: focus.on_surface_resource_read(read(), from_bridge(read())))
    assert refused is ErrorCode.RATE_LIMITED
    assert len(bus.asked) == UI_CALLS_PER_WINDOW


async def test_an_app_that_never_answers_is_deadline_exceeded_and_a_late_one_dropped(
    world: tuple[FocusActor, ServerBus], autojump_clock: trio.testing.MockClock
) -> None:
    focus, bus = world
    bus.silent = True
    refused = await code_of(lambda: focus.on_surface_resource_read(read(), from_bridge(read())))
    assert refused is ErrorCode.DEADLINE_EXCEEDED
    [told] = bus.asked
    late = p.UiResourceReadDoneRequest(read_id=told.read_id, contents=(NOTE,))
    assert not (await focus.on_surface_resource_done(late, from_app(late))).changed


async def test_only_the_reads_own_app_may_tell_its_answer(
    world: tuple[FocusActor, ServerBus],
) -> None:
    focus, bus = world
    bus.hold = trio.Event()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(focus.on_surface_resource_read, read(), from_bridge(read()))
        await trio.testing.wait_all_tasks_blocked()
        [running] = bus.asked
        forged = p.UiResourceReadDoneRequest(read_id=running.read_id, contents=(NOTE,))
        refused = await code_of(
            lambda: focus.on_surface_resource_done(forged, from_app(forged, "other"))
        )
        assert refused is ErrorCode.APP_SCOPE_MISMATCH
        bus.hold.set()
