"""The SDK's Surfaces (`AppContext.surfaces`, `on_surface_event`, `on_surface_closed`) on the
testkit's fake runtime, with the test Surface app (tests/support/surface_app)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lineup.sdk import AppContext, ErrorCode, LineUpError, testkit
from lineup.sdk import protocol as p
from lineup.sdk.manifest import load_manifest, manifest_json
from lineup.sdk.tools import manifest_of
from lineup.tests.support.surface_app import SurfaceApp

INSTANCE = testkit.DEFAULT_INSTANCE
SID = "lu:surface:" + INSTANCE


def test_the_test_apps_manifest_is_the_one_its_class_declares() -> None:
    path = Path(__file__).parents[1] / "support" / "surface_app" / "manifest.json"
    assert path.read_text() == manifest_json(manifest_of(SurfaceApp))
    assert load_manifest(path.read_text()).entrypoints[0].events == ("note.add",)


async def test_open_shows_the_surface_and_opening_again_keeps_its_state() -> None:
    app = SurfaceApp()
    runtime = await testkit.start(app)
    record = await testkit.call_tool(app, "surfacer.open", {"mode": "open"})
    assert record.result == {"surface_id": SID, "codes": []}
    surface = runtime.surfaces.of(INSTANCE)
    assert surface is not None
    assert surface.view["kind"] == "lineup.surface"
    assert surface.view["tool_input"] == {"call": record.call_id}
    reply = await app.app.surfaces.request_open(INSTANCE, state={"other": 1})
    assert (reply.changed, surface.state) == (False, {"seen": 0})


async def test_an_event_becomes_session_data_and_each_revision_shows_in_the_state() -> None:
    app = SurfaceApp()
    runtime = await testkit.start(app)
    await testkit.call_tool(app, "surfacer.open", {"mode": "open"})
    await runtime.send_surface_event("note.add", {"text": "hi"})
    assert runtime.session_data.get(INSTANCE) == ({"notes": ["hi"]}, 1)
    # The Surface writes too (another writer): the app's next write builds on it.
    runtime.session_data.put(INSTANCE, {"notes": ["hi", "from the surface"]})
    await runtime.settle()
    await runtime.send_surface_event("note.add", {"text": "again"})
    assert runtime.session_data.get(INSTANCE) == ({"notes": ["hi", "from the surface", "again"]}, 3)
    surface = runtime.surfaces.of(INSTANCE)
    assert surface is not None and surface.state == {"seen": 3}
    assert surface.state_revision == 3


async def test_an_undeclared_event_or_one_with_no_surface_open_is_refused() -> None:
    app = SurfaceApp()
    runtime = await testkit.start(app)
    with pytest.raises(LineUpError) as none_open:
        await runtime.send_surface_event("note.add")
    assert none_open.value.code is ErrorCode.SURFACE_NOT_FOUND
    await testkit.call_tool(app, "surfacer.open", {"mode": "open"})
    with pytest.raises(LineUpError) as unknown:
        await runtime.send_surface_event("note.remove")
    assert unknown.value.code is ErrorCode.BRIDGE_METHOD_UNKNOWN
    with pytest.raises(LineUpError) as big:
        await runtime.send_surface_event("note.add", {"text": "x" * p.MAX_SURFACE_EVENT_BYTES})
    assert big.value.code is ErrorCode.BRIDGE_MESSAGE_TOO_LARGE


async def test_a_version_the_host_does_not_run_is_unavailable_and_anothers_surface_not_found() -> (
    None
):
    app = SurfaceApp()
    await testkit.start(app)
    future = await testkit.call_tool(app, "surfacer.open", {"mode": "future"})
    assert future.result == {"codes": ["surface_unavailable"]}
    reach = await testkit.call_tool(
        app, "surfacer.open", {"mode": "reach", "other_surface": "lu:surface:other:1"}
    )
    assert reach.result == {"codes": ["surface_not_found", "surface_not_found"]}


class Recording(SurfaceApp):
    async def start(self, app: AppContext) -> None:
        await super().start(app)
        self.closed: list[p.SurfaceClosedEvent] = []

    async def on_surface_closed(self, event: p.SurfaceClosedEvent) -> None:
        self.closed.append(event)


async def test_close_tells_the_app_once_and_an_instance_that_ends_tells_it_instance_ended() -> None:
    app = Recording()
    runtime = await testkit.start(app)
    await testkit.call_tool(app, "surfacer.open", {"mode": "open"})
    first = await app.app.surfaces.request_close(SID)
    again = await app.app.surfaces.request_close(SID)
    await runtime.settle()
    assert (first.open, first.changed, again.changed) == (False, True, False)
    assert [(e.surface_id, e.reason) for e in app.closed] == [(SID, "closed")]
    with pytest.raises(LineUpError) as closed:
        await app.app.surfaces.update(SID, {"x": 1})
    assert closed.value.code is ErrorCode.SURFACE_NOT_FOUND
    reopened = await app.app.surfaces.request_open(INSTANCE)
    assert reopened.changed
    await app.app.lifecycle.request_close(INSTANCE)
    await runtime.settle()
    assert [e.reason for e in app.closed] == ["closed", "instance_ended"]


async def test_a_patch_merges_by_rfc_7396_and_a_state_over_the_bound_is_refused() -> None:
    app = SurfaceApp()
    runtime = await testkit.start(app)
    await testkit.call_tool(app, "surfacer.open", {"mode": "open"})
    await app.app.surfaces.update(SID, {"a": {"b": 1, "c": 2}})
    reply = await app.app.surfaces.update(
        SID, {"a": {"c": None}, "seen": None}, tool_result={"r": 1}
    )
    surface = runtime.surfaces.of(INSTANCE)
    assert surface is not None
    assert (surface.state, surface.tool_result, reply.state_revision) == (
        {"a": {"b": 1}},
        {"r": 1},
        2,
    )
    with pytest.raises(LineUpError) as big:
        await app.app.surfaces.update(SID, {"x": "y" * p.MAX_SURFACE_STATE_BYTES})
    assert big.value.code is ErrorCode.ENVELOPE_TOO_LARGE
