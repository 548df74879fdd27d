"""The Whiteboard's logic through the SDK's testkit only: no runtime, no processes."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from lineup.miniapps import whiteboard as whiteboard_package
from lineup.miniapps.whiteboard import Whiteboard
from lineup.miniapps.whiteboard._board import MAX_POINTS, PALETTE
from lineup.sdk import ErrorCode, LineUpError, testkit
from lineup.sdk import protocol as p
from lineup.sdk.manifest import load_manifest, manifest_json
from lineup.sdk.testkit import CallRecord, FakeRuntime
from lineup.sdk.tools import manifest_of

from ._png_decode import decode

INSTANCE = testkit.DEFAULT_INSTANCE
SURFACE = "lu:surface:" + INSTANCE
OPEN = "whiteboard.open"
SUBMIT = "whiteboard.submit"
BOARD = {"board_id": "b1", "title": "Sketch"}


def stroke(op_id: str, points: list[int] | None = None, **extra: Any) -> dict[str, Any]:
    return {"op_id": op_id, "kind": "stroke", "points": points or [100, 100, 300, 100], **extra}


def document(runtime: FakeRuntime) -> tuple[dict[str, Any], int]:
    data, revision = runtime.session_data.get(INSTANCE)
    assert data is not None
    return data, revision


def item_ids(runtime: FakeRuntime) -> list[str]:
    return [i["id"] for i in document(runtime)[0]["board"]["items"]]


async def opened(
    board: dict[str, Any] | None = None, runtime: FakeRuntime | None = None
) -> tuple[Whiteboard, FakeRuntime, CallRecord]:
    app = Whiteboard()
    runtime = await testkit.start(app, runtime=runtime)
    record = await testkit.call_tool(app, OPEN, board or BOARD)
    return app, runtime, record


async def patch(runtime: FakeRuntime, *ops: dict[str, Any]) -> None:
    await runtime.send_surface_event("board.patch", {"ops": list(ops)})


async def test_open_opens_the_surface_on_a_new_board_and_stays_running() -> None:
    _, runtime, record = await opened()
    assert record.status == "running"
    assert record.progress == [{"opened": "b1"}]
    surface = runtime.surfaces.of(INSTANCE)
    assert surface is not None and surface.entrypoint == "board"
    assert surface.state == {"board_id": "b1", "title": "Sketch", "phase": "drawing"}
    assert surface.tool_input == BOARD
    data, revision = document(runtime)
    assert revision == 1
    assert data["board"] == {
        "board_id": "b1",
        "title": "Sketch",
        "width": 1600,
        "height": 1000,
        "items": [],
    }
    assert INSTANCE in runtime.session_data.subscribed


async def test_open_draws_the_initial_board_it_is_given() -> None:
    initial = {
        "strokes": [{"colour": PALETTE[1], "width": 6, "points": [0, 0, 10, 10]}],
        "text_boxes": [{"x": 5, "y": 5, "text": "title"}],
    }
    _, runtime, _ = await opened({**BOARD, "initial": initial})
    items = document(runtime)[0]["board"]["items"]
    assert [(i["kind"], i.get("colour")) for i in items] == [
        ("stroke", PALETTE[1]),
        ("text", PALETTE[0]),
    ]


@pytest.mark.parametrize(
    "initial",
    [
        {"strokes": [{"points": [1, 2, 3]}]},  # half a point
        {"strokes": [{"points": [1, 1001]}]},  # off the canvas
        {"strokes": [{"points": []}]},
        {"strokes": [{"points": [1, 1] * (MAX_POINTS + 1)}]},
        {"strokes": [{"points": [1, 1], "colour": "#000000"}]},
        {"text_boxes": [{"x": 1, "y": 1, "text": "x" * 501}]},
    ],
)
async def test_an_initial_board_out_of_bounds_is_refused(initial: dict[str, Any]) -> None:
    _, runtime, record = await opened({**BOARD, "initial": initial})
    assert (record.status, record.error_code) == ("failed", "tool_input_invalid")
    assert runtime.surfaces.of(INSTANCE) is None


async def test_a_patch_applies_its_ops_and_lists_their_ids_for_the_surface() -> None:
    _, runtime, _ = await opened()
    await patch(runtime, stroke("a"), {"op_id": "b", "kind": "text", "x": 1, "y": 2, "text": "t"})
    data, revision = document(runtime)
    assert revision == 2
    assert item_ids(runtime) == ["a", "b"]
    assert data["applied"] == ["a", "b"]
    await patch(runtime, {"op_id": "c", "kind": "undo", "target": "a"})
    assert item_ids(runtime) == ["b"]


async def test_a_re_sent_op_is_applied_once_and_writes_nothing() -> None:
    _, runtime, _ = await opened()
    await patch(runtime, stroke("a"))
    await patch(runtime, stroke("a"), stroke("a", [1, 1]))
    assert document(runtime)[1] == 2
    assert item_ids(runtime) == ["a"]


async def test_a_stale_revision_is_re_read_and_the_ops_applied_on_the_newer_board() -> None:
    _, runtime, _ = await opened()
    await patch(runtime, stroke("a"))
    # Another writer (the Surface's own replace) moves the board on, unheard by the app.
    data, revision = document(runtime)
    data["board"]["items"].append({**data["board"]["items"][0], "id": "theirs"})
    text = json.dumps(data, separators=(",", ":"))
    runtime.session_data.documents[INSTANCE] = (text, revision + 1)
    await patch(runtime, stroke("b"))
    assert item_ids(runtime) == ["a", "theirs", "b"]
    assert document(runtime)[1] == revision + 2


async def test_a_write_that_keeps_meeting_newer_revisions_fails_without_claiming_it() -> None:
    _, runtime, _ = await opened()
    runtime.refuse(p.SessionDataReplaceRequest, ErrorCode.STALE_REVISION, times=3)
    with pytest.raises(LineUpError) as raised:
        await patch(runtime, stroke("a"))
    assert raised.value.code is ErrorCode.STALE_REVISION
    assert item_ids(runtime) == []


async def test_bad_and_oversized_ops_are_refused_with_their_code_in_the_document() -> None:
    _, runtime, _ = await opened()
    await patch(runtime, stroke("bad", [2000, 1]))
    big = [1600, 1000] * MAX_POINTS
    n = 0
    while not document(runtime)[0]["refused"][1:]:
        await patch(runtime, stroke(f"s{n}", big, width=40))
        n += 1
        assert n < 100
    assert document(runtime)[0]["refused"] == [
        {"op_id": "bad", "code": "invalid_arguments"},
        {"op_id": f"s{n - 1}", "code": "quota_exceeded"},
    ]
    assert f"s{n - 1}" not in item_ids(runtime)


async def test_a_restarted_process_finds_the_board_and_goes_on_drawing_on_it() -> None:
    _, runtime, _ = await opened()
    await patch(runtime, stroke("a"))
    # A new process (the old one was killed): the runtime re-delivers the open call.
    app = Whiteboard()
    await testkit.start(app, runtime=runtime)
    await patch(runtime, stroke("a"), stroke("b"))  # the Surface re-sends what it has
    assert item_ids(runtime) == ["a", "b"]
    record = await testkit.call_tool(app, OPEN, BOARD)
    assert record.status == "running"
    assert item_ids(runtime) == ["a", "b"]  # the board was not reset


async def test_a_refresh_opens_the_surface_again() -> None:
    app, runtime, _ = await opened()
    runtime.surfaces.by_instance.clear()  # focus restarted and holds none
    await app.on_view_refresh()
    assert runtime.surfaces.of(INSTANCE) is not None


async def submit_by_tool(
    app: Whiteboard, runtime: FakeRuntime, answer: dict[str, Any], board_id: str = "b1"
) -> CallRecord:
    records: list[CallRecord] = []

    async def submit() -> None:
        records.append(await testkit.call_tool(app, SUBMIT, {"board_id": board_id}))

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(submit)
            await trio.testing.wait_all_tasks_blocked()  # it waits for the user
            asked = runtime.interactions.last
            assert asked is not None and asked.kind == "confirm"
            runtime.interactions.answer(asked.interaction_id, answer)
            await runtime.settle()
    return records[0]


async def test_an_approved_submit_makes_the_png_and_json_completes_the_open_and_closes() -> None:
    app, runtime, open_call = await opened()
    await patch(
        runtime,
        stroke("a", colour=PALETTE[2], width=10),
        {"op_id": "b", "kind": "text", "x": 500, "y": 500, "text": "hi", "colour": PALETTE[1]},
    )
    record = await submit_by_tool(app, runtime, {"approved": True})
    assert record.status == "completed" and record.result is not None
    asked = runtime.interactions.last
    assert asked is not None and asked.parent_call_id == open_call.call_id
    png_id, json_id = record.result["artifact_id"], record.result["json_artifact_id"]
    assert record.result["summary"] == {
        "strokes": 1,
        "text_boxes": 1,
        "colours": [PALETTE[1], PALETTE[2]],
        "width": 1600,
        "height": 1000,
    }
    png_info = runtime.artifacts.infos[png_id]
    assert (png_info.media_type, png_info.name, png_info.instance_id) == (
        "image/png",
        "Sketch - submitted.png",
        INSTANCE,
    )
    image = decode(runtime.artifacts.contents[png_id])
    assert (image.width, image.height) == (1600, 1000)
    assert image.pixel(200, 100) == PALETTE[2]
    assert image.pixel(200, 300) == "#ffffff"
    board = json.loads(runtime.artifacts.contents[json_id])
    assert [i["id"] for i in board["items"]] == ["a", "b"]
    assert runtime.artifacts.infos[json_id].media_type == "application/json"
    # The Agent is told each artifact's metadata, the PNG first: what the runtime recorded,
    # the size and SHA-256 of the very bytes stored.
    artifacts = [
        {
            "artifact_id": png_id,
            "name": "Sketch - submitted.png",
            "media_type": "image/png",
            "size": len(runtime.artifacts.contents[png_id]),
            "sha256": hashlib.sha256(runtime.artifacts.contents[png_id]).hexdigest(),
        },
        {
            "artifact_id": json_id,
            "name": "Sketch - submitted.json",
            "media_type": "application/json",
            "size": len(runtime.artifacts.contents[json_id]),
            "sha256": hashlib.sha256(runtime.artifacts.contents[json_id]).hexdigest(),
        },
    ]
    assert record.result["artifacts"] == artifacts
    assert [runtime.artifacts.infos[a["artifact_id"]].sha256 for a in artifacts] == [
        a["sha256"] for a in artifacts
    ]
    # The open call completes with the PNG and the same metadata, the Surface closes, the
    # instance closes.
    assert open_call.result == {
        "status": "completed",
        "artifact_id": png_id,
        "artifacts": artifacts,
    }
    assert runtime.surfaces.of(INSTANCE) is None
    assert runtime.lifecycle.requests[-1] == (INSTANCE, "close")


@pytest.mark.parametrize("answer", [{"approved": False}, {"cancelled": True}])
async def test_a_declined_submit_fails_cancelled_by_user_and_the_board_stays(
    answer: dict[str, Any],
) -> None:
    app, runtime, open_call = await opened()
    await patch(runtime, stroke("a"))
    record = await submit_by_tool(app, runtime, answer)
    assert (record.status, record.error_code) == ("failed", "cancelled_by_user")
    assert runtime.artifacts.infos == {}
    assert open_call.status == "running"
    surface = runtime.surfaces.of(INSTANCE)
    assert surface is not None and surface.state["phase"] == "drawing"
    await patch(runtime, stroke("b"))
    assert item_ids(runtime) == ["a", "b"]


async def test_a_submit_of_another_board_is_refused() -> None:
    app, _, _ = await opened()
    record = await testkit.call_tool(app, SUBMIT, {"board_id": "other"})
    assert (record.status, record.error_code) == ("failed", "app_instance_not_found")


async def test_the_surface_s_submit_asks_once_and_an_approval_submits() -> None:
    _, runtime, open_call = await opened()
    await patch(runtime, stroke("a"))
    await runtime.send_surface_event("board.submit")
    await runtime.send_surface_event("board.submit")  # a second click while it asks
    assert len(runtime.interactions.asked) == 1
    asked = runtime.interactions.last
    assert asked is not None and asked.parent_call_id == open_call.call_id
    surface = runtime.surfaces.of(INSTANCE)
    assert surface is not None and surface.state["phase"] == "confirming"
    runtime.interactions.answer(asked.interaction_id, {"approved": True})
    await runtime.settle()
    assert open_call.status == "completed" and open_call.result is not None
    png = runtime.artifacts.contents[open_call.result["artifact_id"]]
    assert decode(png).pixel(200, 100) == PALETTE[0]
    told = open_call.result["artifacts"]
    assert [(a["media_type"], a["name"]) for a in told] == [
        ("image/png", "Sketch - submitted.png"),
        ("application/json", "Sketch - submitted.json"),
    ]
    assert told[0]["artifact_id"] == open_call.result["artifact_id"]
    assert [
        runtime.artifacts.infos[a["artifact_id"]].model_dump(include=set(a)) for a in told
    ] == told
    assert runtime.surfaces.of(INSTANCE) is None
    assert runtime.lifecycle.requests == [(INSTANCE, "close")]


async def test_the_surface_s_submit_declined_leaves_the_board_to_draw_on() -> None:
    _, runtime, open_call = await opened()
    await runtime.send_surface_event("board.submit")
    asked = runtime.interactions.last
    assert asked is not None
    runtime.interactions.answer(asked.interaction_id, {"approved": False})
    await runtime.settle()
    assert open_call.status == "running"
    assert runtime.artifacts.infos == {}
    surface = runtime.surfaces.of(INSTANCE)
    assert surface is not None and surface.state["phase"] == "drawing"
    await runtime.send_surface_event("board.submit")  # and may ask again
    assert len(runtime.interactions.asked) == 2


async def test_an_approval_heard_by_a_restarted_process_still_submits() -> None:
    _, runtime, open_call = await opened()
    await patch(runtime, stroke("a"))
    await runtime.send_surface_event("board.submit")
    asked = runtime.interactions.last
    assert asked is not None
    app = Whiteboard()  # the process was replaced before the answer came
    await testkit.start(app, runtime=runtime)
    runtime.interactions.answer(asked.interaction_id, {"approved": True})
    await runtime.settle()
    assert len(runtime.artifacts.infos) == 2
    assert runtime.lifecycle.requests == [(INSTANCE, "close")]
    assert open_call.status == "running"  # the old process's call: the runtime ends it


async def test_an_approved_confirm_its_surface_asked_submits_nothing() -> None:
    # A Surface may ask its own questions (`lineup/ui/request`); only the app's own submit
    # confirmation submits the board.
    app, runtime, open_call = await opened()
    await patch(runtime, stroke("a"))
    asked_by_surface = p.InteractionRecord(
        interaction_id="lu:interaction:surface:1",
        kind="confirm",
        state="completed",
        request={"kind": "confirm", "title": "Clear?", "prompt": "Clear the board?"},
        result={"approved": True},
        instance_id=INSTANCE,
        created_at=1.0,
        asked_by="surface",
    )
    await app.on_interaction_updated(asked_by_surface)
    await runtime.settle()
    assert runtime.artifacts.infos == {}
    assert open_call.status == "running" and runtime.lifecycle.requests == []


async def test_events_after_the_instance_closed_do_nothing() -> None:
    app, runtime, _ = await opened()
    await app.on_tool_cancelled(runtime.calls[next(iter(runtime.calls))].call_id, "app_closed")
    event = p.SurfaceEvent(
        instance_id=INSTANCE, surface_id=SURFACE, name="board.patch", data={"ops": [stroke("a")]}
    )
    await app.on_surface_event(event)
    assert item_ids(runtime) == []


def test_the_shipped_manifest_is_the_one_the_code_declares() -> None:
    shipped = Path(whiteboard_package.__file__).parent / "manifest.json"
    assert shipped.read_text() == manifest_json(manifest_of(Whiteboard))
    manifest = load_manifest(shipped.read_text())
    assert manifest.host.surface_required is True
    assert [
        (e.id, e.kind, e.document, e.surface_version, e.events) for e in manifest.entrypoints
    ] == [("board", "surface", "index.html", 1, ("board.patch", "board.submit", "board.export"))]
    assert [t.method for t in manifest.tools] == [OPEN, "whiteboard.show", SUBMIT]
    assert manifest.requested_capabilities == ("artifact.save",)
    web = shipped.parent / "web"
    assert sorted(f.name for f in web.iterdir()) == [
        "board.css",
        "board.js",
        "index.html",
    ]  # the bridge client is the runtime's (`_lineup/bridge.js`), not a copy of the app's


def test_the_surface_document_has_no_inline_script_or_style_and_loads_nothing_external() -> None:
    web = Path(whiteboard_package.__file__).parent / "web"
    html = (web / "index.html").read_text()
    assert re.findall(r"<script\b[^>]*>", html) == [
        '<script src="_lineup/bridge.js">',
        '<script src="board.js">',
    ]
    assert "<style" not in html and " style=" not in html
    assert not re.search(r"\son[a-z]+=", html)  # no inline event handlers
    for name in ("index.html", "board.js", "board.css"):
        text = (web / name).read_text()
        assert "http://" not in text and "https://" not in text and "//cdn" not in text, name
        assert "@import" not in text and "url(" not in text, name
