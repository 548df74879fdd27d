"""Surfaces in the focus actor (`focus.sdk.surface.*`, `focus.ui.surface.*`): who may open
one, the view focus makes of it, its events to the app and its session data from both
writers — against an in-memory store and bus. (The real processes: tests/e2e/test_surfaces.py.)"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

import pytest
import trio
import trio.testing

from lineup.actors.focus import FocusActor
from lineup.actors.focus._app_book import AppEntry
from lineup.actors.focus._surfaces import PLACEHOLDER_VIEW, VIEW_KIND, surface_id_of
from lineup.actors.focus.messages import (
    SurfaceAccepted,
    SurfaceAssetsRequest,
    SurfaceEventRequest,
    SurfaceSessionDataRequest,
    ViewsRequest,
)
from lineup.actors.kernel import (
    ActorContext,
    ActorKind,
    ActorRestarted,
    AuditRecord,
    Bus,
    Envelope,
    ErrorCode,
    Identity,
    LineUpError,
    Message,
)
from lineup.actors.store.messages import (
    SessionDataGetReply,
    SessionDataGetRequest,
    SessionDataReplaceReply,
    SessionDataReplaceRequest,
)
from lineup.hostbridge.messages import SessionDataUpdatedEvent, ViewUpdatedEvent
from lineup.sdk import protocol as p
from lineup.sdk.manifest import Entrypoint, Host, Manifest

SCOPE = "surf"
INSTANCE = "surf:c1"
SID = surface_id_of(INSTANCE)
MANIFEST = Path("/apps/surf/manifest.json")


class FakeBus:
    """The store's session data (compare-and-set revisions), every tell and notify, and the
    audit rows; `down` names peers whose channel is gone."""

    def __init__(self) -> None:
        self.sessions: dict[tuple[str, str], tuple[dict[str, Any] | None, int]] = {}
        self.told: list[tuple[str, Message]] = []
        self.audits: list[AuditRecord] = []
        self.down: set[str] = set()

    async def request(self, peer: str, body: Message, *, expect: type[Any], **_: Any) -> Any:
        await trio.lowlevel.checkpoint()
        if isinstance(body, SessionDataGetRequest):
            data, revision = self.sessions.get((body.app_scope, body.app_session_id), (None, 0))
            return SessionDataGetReply(data=data, revision=revision)
        if isinstance(body, SessionDataReplaceRequest):
            key = (body.app_scope, body.app_session_id)
            revision = self.sessions.get(key, (None, 0))[1]
            if revision != body.expected_revision:
                raise LineUpError(ErrorCode.STALE_REVISION, "")
            self.sessions[key] = (body.data, revision + 1)
            return SessionDataReplaceReply(revision=revision + 1, changed=True)
        raise AssertionError(body.TYPE)

    async def tell(self, peer: str, body: Message, **_: Any) -> ErrorCode | None:
        await trio.lowlevel.checkpoint()
        if peer in self.down:
            return ErrorCode.ACTOR_UNAVAILABLE
        self.told.append((peer, body))
        return None

    async def notify(self, peer: str, body: Message, **_: Any) -> None:
        await trio.lowlevel.checkpoint()
        if peer in self.down:
            raise ActorRestarted(ErrorCode.ACTOR_RESTARTED, peer)
        self.told.append((peer, body))

    def connection(self, name: str) -> None:
        return None  # no channel yet: focus tells the router its index once it has one

    def audit(self, record: AuditRecord) -> None:
        self.audits.append(record)

    def audit_refusal(self, record: AuditRecord) -> bool:
        self.audits.append(record)
        return False

    def of(self, kind: type[Message], peer: str | None = None) -> list[Any]:
        return [b for to, b in self.told if isinstance(b, kind) and peer in (None, to)]


def manifest(*entrypoints: Entrypoint, surface_required: bool = False) -> Manifest:
    return Manifest(
        format="lineup.app.v1",
        app_scope=SCOPE,
        version="1",
        kind="bundled-reference",
        entrypoints=entrypoints,
        host=Host(min_version="0.1.0", surface_required=surface_required),
    )


BOARD = Entrypoint(id="board", kind="surface", events=("board.patch",))


def focus_with(bus: FakeBus, app: Manifest | None = None) -> FocusActor:
    ctx = ActorContext(
        Identity(ActorKind.FOCUS, "focus"), 1, Path("/nonexistent"), {}, cast(Bus, bus)
    )
    focus = FocusActor(ctx)
    focus.instances.recover((), (), runtime_restarted=True)  # the chat, born and up
    for scope in (SCOPE, "other"):
        focus.book.put(
            AppEntry(
                scope=scope,
                source="bundled",
                title="Surf",
                entry="x:Y",
                manifest_file=str(MANIFEST),
                manifest=app or manifest(BOARD),
            )
        )
    for instance_id in (INSTANCE, "other:c1"):
        scope, _, call_id = instance_id.partition(":")
        focus.instances.launch(instance_id, scope, foreground=True, call_id=call_id)
        focus.instances.ready(instance_id)
    focus.instances.commit()
    return focus


def from_app(body: Message, scope: str = SCOPE) -> Envelope:
    return Envelope(Identity(ActorKind.MINIAPP, f"miniapp:{scope}"), body, 1, True)


def from_bridge(body: Message, name: str = "hostbridge") -> Envelope:
    return Envelope(Identity(ActorKind.HOSTBRIDGE, name), body, 1, True)


async def code_of(call: Any) -> ErrorCode | None:
    try:
        result = call()
        if hasattr(result, "__await__"):
            await result
    except LineUpError as exc:
        return exc.code
    return None


@pytest.fixture
async def world() -> AsyncIterator[tuple[FocusActor, FakeBus]]:
    bus = FakeBus()
    focus = focus_with(bus)
    async with trio.open_nursery() as nursery:
        focus.port.nursery = nursery
        yield focus, bus
        nursery.cancel_scope.cancel()


def open_request(**fields: Any) -> p.SurfaceOpenRequest:
    return p.SurfaceOpenRequest(instance_id=INSTANCE, **fields)


def refusals(bus: FakeBus) -> list[tuple[str | None, str | None]]:
    return [(r.message_type, r.code) for r in bus.audits if r.event == "focus.surface_refused"]


async def test_an_open_surface_is_the_instances_view_pushed_and_listed_and_open_again_is_the_same(
    world: tuple[FocusActor, FakeBus],
) -> None:
    focus, bus = world
    msg = open_request(state={"n": 1}, tool_input={"board_id": "b"})
    reply = focus.on_surface_open(msg, from_app(msg))
    assert (reply.surface_id, reply.entrypoint, reply.state_revision, reply.changed) == (
        SID, "board", 0, True
    )  # fmt: skip
    await trio.testing.wait_all_tasks_blocked()
    [pushed] = bus.of(ViewUpdatedEvent, "hostbridge")
    assert pushed.view == {
        "kind": VIEW_KIND,
        "surface_id": SID,
        "entrypoint": "board",
        "surface_version": 1,
        "label": "Surf",
        "state": {"n": 1},
        "state_revision": 0,
        "tool_input": {"board_id": "b"},
    }
    views = focus.on_views(ViewsRequest(), from_bridge(ViewsRequest()))
    assert [v.view for v in views.views if v.instance_id == INSTANCE] == [pushed.view]
    again = open_request(state={"n": 2})
    second = focus.on_surface_open(again, from_app(again))
    assert (second.surface_id, second.changed, second.state_revision) == (SID, False, 0)
    surface = focus.surface_book.of(INSTANCE)
    assert surface is not None and surface.state == {"n": 1}


async def test_an_update_merges_its_patch_one_revision_on_and_shows_it(
    world: tuple[FocusActor, FakeBus], autojump_clock: trio.testing.MockClock
) -> None:
    focus, bus = world
    focus.on_surface_open(open_request(state={"a": 1, "b": 2}), from_app(open_request()))
    update = p.SurfaceUpdateRequest(surface_id=SID, patch={"b": None, "c": 3}, tool_result={"k": 1})
    reply = focus.on_surface_update(update, from_app(update))
    assert reply.state_revision == 1
    await trio.sleep(1)  # (virtual time) the push rate: views go at most 30 a second
    view = bus.of(ViewUpdatedEvent)[-1].view
    assert (view["state"], view["tool_result"]) == ({"a": 1, "c": 3}, {"k": 1})


async def test_opening_is_refused_for_another_apps_instance_no_entrypoint_or_a_newer_version(
    world: tuple[FocusActor, FakeBus],
) -> None:
    focus, bus = world
    theirs = p.SurfaceOpenRequest(instance_id="other:c1")
    assert await code_of(lambda: focus.on_surface_open(theirs, from_app(theirs))) is (
        ErrorCode.APP_INSTANCE_NOT_FOUND
    )
    assert any(r.event == "focus.scope_denied" for r in bus.audits)  # another app's: noted
    gone = p.SurfaceOpenRequest(instance_id="surf:never")
    assert await code_of(lambda: focus.on_surface_open(gone, from_app(gone))) is (
        ErrorCode.APP_INSTANCE_NOT_FOUND
    )
    for app in (manifest(), manifest(Entrypoint(id="board", kind="surface", surface_version=2))):
        focus.book.change(SCOPE, manifest=app)
        msg = open_request()
        assert await code_of(lambda m=msg: focus.on_surface_open(m, from_app(m))) is (
            ErrorCode.SURFACE_UNAVAILABLE
        )
    focus.book.change(SCOPE, manifest=manifest(BOARD))
    named = open_request(entrypoint="missing")
    assert await code_of(lambda: focus.on_surface_open(named, from_app(named))) is (
        ErrorCode.SURFACE_UNAVAILABLE
    )
    big = open_request(state={"x": "y" * p.MAX_SURFACE_STATE_BYTES})
    assert await code_of(lambda: focus.on_surface_open(big, from_app(big))) is (
        ErrorCode.ENVELOPE_TOO_LARGE
    )
    assert focus.surface_book.of(INSTANCE) is None
    assert refusals(bus) == [
        ("focus.sdk.surface.open", "app_instance_not_found"),
        ("focus.sdk.surface.open", "app_instance_not_found"),
        ("focus.sdk.surface.open", "surface_unavailable"),
        ("focus.sdk.surface.open", "surface_unavailable"),
        ("focus.sdk.surface.open", "surface_unavailable"),
        ("focus.sdk.surface.open", "envelope_too_large"),
    ]


async def test_another_app_can_neither_update_nor_close_the_surface(
    world: tuple[FocusActor, FakeBus],
) -> None:
    focus, bus = world
    focus.on_surface_open(open_request(), from_app(open_request()))
    update = p.SurfaceUpdateRequest(surface_id=SID, patch={"x": 1})
    close = p.SurfaceCloseRequest(surface_id=SID)
    assert await code_of(lambda: focus.on_surface_update(update, from_app(update, "other"))) is (
        ErrorCode.SURFACE_NOT_FOUND
    )
    assert await code_of(lambda: focus.on_surface_close(close, from_app(close, "other"))) is (
        ErrorCode.SURFACE_NOT_FOUND
    )
    assert focus.surface_book.of(INSTANCE) is not None
    assert refusals(bus) == [
        ("focus.sdk.surface.update", "surface_not_found"),
        ("focus.sdk.surface.close", "surface_not_found"),
    ]


async def test_the_apps_own_render_is_kept_under_the_surface_and_comes_back_when_it_closes(
    world: tuple[FocusActor, FakeBus],
) -> None:
    focus, bus = world
    focus.on_surface_open(open_request(), from_app(open_request()))
    render = p.ViewUpdateRequest(instance_id=INSTANCE, view={"kind": "mine", "n": 1})
    receipt = focus.on_view_update(render, from_app(render))
    assert not receipt.changed
    shown = focus.view_book.view(INSTANCE)
    assert shown is not None and shown.view["kind"] == VIEW_KIND  # not the app's
    close = p.SurfaceCloseRequest(surface_id=SID)
    reply = focus.on_surface_close(close, from_app(close))
    assert (reply.open, reply.changed) == (False, True)
    shown = focus.view_book.view(INSTANCE)
    assert shown is not None and shown.view == {"kind": "mine", "n": 1}
    again = focus.on_surface_close(close, from_app(close))
    assert (again.open, again.changed) == (False, False)
    await trio.testing.wait_all_tasks_blocked()
    [closed] = bus.of(p.SurfaceClosedEvent, f"miniapp:{SCOPE}")
    assert (closed.surface_id, closed.reason) == (SID, "closed")


async def test_a_surface_closed_with_no_view_of_the_apps_leaves_the_placeholder(
    world: tuple[FocusActor, FakeBus],
) -> None:
    focus, _ = world
    focus.on_surface_open(open_request(), from_app(open_request()))
    close = p.SurfaceCloseRequest(surface_id=SID)
    focus.on_surface_close(close, from_app(close))
    shown = focus.view_book.view(INSTANCE)
    assert shown is not None and shown.view == PLACEHOLDER_VIEW


async def test_no_app_draws_the_runtimes_surface_view_itself(
    world: tuple[FocusActor, FakeBus],
) -> None:
    focus, _ = world
    forged = p.ViewUpdateRequest(instance_id=INSTANCE, view={"kind": VIEW_KIND, "state": {}})
    assert await code_of(lambda: focus.on_view_update(forged, from_app(forged))) is (
        ErrorCode.PERMISSION_DENIED
    )


async def test_an_app_that_requires_a_surface_may_not_draw_a_trusted_kind() -> None:
    bus = FakeBus()
    focus = focus_with(bus, manifest(BOARD, surface_required=True))
    trusted = p.ViewUpdateRequest(instance_id=INSTANCE, view={"kind": "task.dashboard"})
    assert await code_of(lambda: focus.on_view_update(trusted, from_app(trusted))) is (
        ErrorCode.SURFACE_UNAVAILABLE
    )
    assert refusals(bus) == [("focus.sdk.view.update", "surface_unavailable")]


async def test_assets_are_the_web_folder_beside_the_manifest_only_while_open(
    world: tuple[FocusActor, FakeBus],
) -> None:
    focus, _ = world
    ask = SurfaceAssetsRequest(instance_id=INSTANCE)
    assert await code_of(lambda: focus.on_surface_assets(ask, from_bridge(ask))) is (
        ErrorCode.SURFACE_NOT_FOUND
    )
    focus.on_surface_open(open_request(), from_app(open_request()))
    reply = focus.on_surface_assets(ask, from_bridge(ask))
    assert (reply.surface_id, reply.web_root, reply.document) == (
        SID, str(MANIFEST.parent / "web"), "index.html"
    )  # fmt: skip
    missing = SurfaceAssetsRequest(instance_id="surf:never")
    assert await code_of(lambda: focus.on_surface_assets(missing, from_bridge(missing))) is (
        ErrorCode.APP_INSTANCE_NOT_FOUND
    )


async def test_an_app_with_no_folder_of_its_own_has_no_assets_never_one_from_the_cwd(
    world: tuple[FocusActor, FakeBus],
) -> None:
    focus, _ = world
    focus.on_surface_open(open_request(), from_app(open_request()))
    ask = SurfaceAssetsRequest(instance_id=INSTANCE)
    # An installed app's entry names its cache's `web_root`, and no manifest file.
    focus.book.change(SCOPE, manifest_file="", web_root="/cache/surf/1.0/app/surf/web")
    assert focus.on_surface_assets(ask, from_bridge(ask)).web_root == (
        "/cache/surf/1.0/app/surf/web"
    )
    focus.book.change(SCOPE, manifest_file="", web_root="")  # its package is gone
    assert await code_of(lambda: focus.on_surface_assets(ask, from_bridge(ask))) is (
        ErrorCode.SURFACE_UNAVAILABLE
    )


async def test_a_declared_event_reaches_the_app_and_anything_else_is_refused(
    world: tuple[FocusActor, FakeBus],
) -> None:
    focus, bus = world
    focus.on_surface_open(open_request(), from_app(open_request()))

    def event(**fields: Any) -> SurfaceEventRequest:
        return SurfaceEventRequest(
            **{"instance_id": INSTANCE, "surface_id": SID, "name": "board.patch", **fields}
        )

    ok = event(data={"ops": [1]})
    accepted = await focus.on_surface_event(ok, from_bridge(ok))
    assert isinstance(accepted, SurfaceAccepted) and accepted.surface_id == SID
    [told] = bus.of(p.SurfaceEvent, f"miniapp:{SCOPE}")
    assert (told.instance_id, told.surface_id, told.name, told.data) == (
        INSTANCE, SID, "board.patch", {"ops": [1]}
    )  # fmt: skip
    cases = [
        (event(name="board.submit"), ErrorCode.BRIDGE_METHOD_UNKNOWN),
        (event(data={"x": "y" * p.MAX_SURFACE_EVENT_BYTES}), ErrorCode.BRIDGE_MESSAGE_TOO_LARGE),
        (event(surface_id=surface_id_of("other:c1")), ErrorCode.SURFACE_NOT_FOUND),
        (event(instance_id="other:c1"), ErrorCode.SURFACE_NOT_FOUND),
        (event(instance_id="surf:never"), ErrorCode.APP_INSTANCE_NOT_FOUND),
    ]
    for msg, code in cases:
        assert await code_of(lambda m=msg: focus.on_surface_event(m, from_bridge(m))) is code
    bus.down.add(f"miniapp:{SCOPE}")
    assert await code_of(lambda: focus.on_surface_event(ok, from_bridge(ok))) is (
        ErrorCode.ACTOR_RESTARTED
    )  # the Surface retries
    assert [c for _, c in refusals(bus)] == [
        "bridge_method_unknown",
        "bridge_message_too_large",
        "surface_not_found",
        "surface_not_found",
        "app_instance_not_found",
        "actor_restarted",
    ]
    assert len(bus.of(p.SurfaceEvent)) == 1


def session(op: str, **fields: Any) -> SurfaceSessionDataRequest:
    return SurfaceSessionDataRequest(instance_id=INSTANCE, surface_id=SID, op=op, **fields)


async def test_a_write_of_either_writer_reaches_the_app_and_the_subscribed_hostbridge(
    world: tuple[FocusActor, FakeBus],
) -> None:
    focus, bus = world
    focus.on_surface_open(open_request(), from_app(open_request()))
    sub = p.SessionDataSubscribeRequest(instance_id=INSTANCE)
    await focus.on_session_subscribe(sub, from_app(sub))
    watch = session("subscribe")
    snapshot = await focus.on_surface_session_data(watch, from_bridge(watch, "hostbridge"))
    assert (snapshot.data, snapshot.revision) == (None, 0)
    # The Surface writes …
    write = session("replace", data={"board": 1}, expected_revision=0)
    written = await focus.on_surface_session_data(write, from_bridge(write))
    assert written.revision == 1
    # … and the app writes.
    mine = p.SessionDataReplaceRequest(instance_id=INSTANCE, data={"board": 2}, expected_revision=1)
    receipt = await focus.on_session_replace(mine, from_app(mine))
    assert receipt.seq == 2
    to_app = bus.of(p.SessionDataEvent, f"miniapp:{SCOPE}")
    to_bridge = bus.of(SessionDataUpdatedEvent, "hostbridge")
    assert [(e.data, e.revision) for e in to_app] == [({"board": 1}, 1), ({"board": 2}, 2)]
    assert [(e.surface_id, e.data, e.revision) for e in to_bridge] == [
        (SID, {"board": 1}, 1), (SID, {"board": 2}, 2)
    ]  # fmt: skip
    got = session("get")
    now = await focus.on_surface_session_data(got, from_bridge(got))
    assert (now.data, now.revision) == ({"board": 2}, 2)


async def test_a_stale_replace_from_the_surface_is_refused_and_changes_nothing(
    world: tuple[FocusActor, FakeBus],
) -> None:
    focus, bus = world
    focus.on_surface_open(open_request(), from_app(open_request()))
    first = session("replace", data={"v": 1}, expected_revision=0)
    await focus.on_surface_session_data(first, from_bridge(first))
    stale = session("replace", data={"v": "old"}, expected_revision=0)
    assert await code_of(lambda: focus.on_surface_session_data(stale, from_bridge(stale))) is (
        ErrorCode.STALE_REVISION
    )
    assert bus.sessions[(SCOPE, INSTANCE)] == ({"v": 1}, 1)
    assert refusals(bus) == [("focus.ui.surface.session_data", "stale_revision")]


async def test_session_data_needs_that_open_surface_and_a_closed_one_stops_its_subscribers(
    world: tuple[FocusActor, FakeBus],
) -> None:
    focus, bus = world
    get = session("get")
    assert await code_of(lambda: focus.on_surface_session_data(get, from_bridge(get))) is (
        ErrorCode.SURFACE_NOT_FOUND
    )
    focus.on_surface_open(open_request(), from_app(open_request()))
    watch = session("subscribe")
    await focus.on_surface_session_data(watch, from_bridge(watch))
    close = p.SurfaceCloseRequest(surface_id=SID)
    focus.on_surface_close(close, from_app(close))
    mine = p.SessionDataReplaceRequest(instance_id=INSTANCE, data={"v": 1}, expected_revision=0)
    await focus.on_session_replace(mine, from_app(mine))
    assert bus.of(SessionDataUpdatedEvent) == []
    assert await code_of(lambda: focus.on_surface_session_data(get, from_bridge(get))) is (
        ErrorCode.SURFACE_NOT_FOUND
    )


async def test_an_instance_that_ends_drops_its_surface_and_tells_the_app(
    world: tuple[FocusActor, FakeBus],
) -> None:
    focus, bus = world

    async def persist() -> None:  # the store's part is not what this is about
        focus.instances.commit()

    focus.lifecycle._persist = persist  # type: ignore[method-assign]
    focus.on_surface_open(open_request(), from_app(open_request()))
    await focus.lifecycle._end(INSTANCE, SCOPE, "stopped")
    await trio.testing.wait_all_tasks_blocked()
    assert focus.surface_book.of(INSTANCE) is None
    [closed] = bus.of(p.SurfaceClosedEvent, f"miniapp:{SCOPE}")
    assert (closed.surface_id, closed.reason) == (SID, "instance_ended")
