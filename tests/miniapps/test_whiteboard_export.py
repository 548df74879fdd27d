"""The Whiteboard as the first user of capabilities (issue 14) and as a start target (issue 15),
through the SDK's testkit only: Export renders the board as a PNG artifact and asks for
`artifact.save`; a board the user opened from the Shell (`app.opened`) is one of its own."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from lineup.miniapps.whiteboard import Whiteboard
from lineup.miniapps.whiteboard._app import artifact_name
from lineup.sdk import protocol as p
from lineup.sdk import testkit

INSTANCE = testkit.DEFAULT_INSTANCE
OPENED = p.UiEvent(instance_id=INSTANCE, event={"kind": p.UI_APP_OPENED})


async def test_a_whiteboard_the_user_opened_gets_a_board_of_its_own_in_a_surface() -> None:
    app = Whiteboard()
    runtime = await testkit.start(app)
    await app.on_ui_event(OPENED)
    await runtime.settle()
    surface = runtime.surfaces.of(INSTANCE)
    assert surface is not None and surface.entrypoint == "board"
    assert surface.state["title"] == "Whiteboard" and surface.state["phase"] == "drawing"
    data, revision = runtime.session_data.get(INSTANCE)
    assert data is not None and revision == 1
    assert data["board"]["board_id"] == surface.state["board_id"]
    assert data["board"]["items"] == []


async def test_a_whiteboard_opened_again_keeps_its_board_and_writes_nothing() -> None:
    app = Whiteboard()
    runtime = await testkit.start(app)
    await app.on_ui_event(OPENED)
    await runtime.settle()
    await runtime.send_surface_event(
        "board.patch",
        {"ops": [{"op_id": "s1", "kind": "stroke", "points": [10, 10, 200, 200]}]},
    )
    _, revision = runtime.session_data.get(INSTANCE)
    await app.on_ui_event(OPENED)
    await runtime.settle()
    data, again = runtime.session_data.get(INSTANCE)
    assert again == revision and data is not None
    assert [i["id"] for i in data["board"]["items"]] == ["s1"]


async def test_other_ui_events_do_nothing() -> None:
    app = Whiteboard()
    runtime = await testkit.start(app)
    await app.on_ui_event(p.UiEvent(instance_id=INSTANCE, event={"kind": "task.finish"}))
    await runtime.settle()
    assert runtime.surfaces.of(INSTANCE) is None
    assert runtime.session_data.get(INSTANCE) == (None, 0)


async def drawn() -> tuple[Whiteboard, testkit.FakeRuntime]:
    """A board opened by the Agent with one stroke on it."""
    app = Whiteboard()
    runtime = await testkit.start(app)
    await testkit.call_tool(app, "whiteboard.open", {"board_id": "b1", "title": "Sketch"})
    await runtime.send_surface_event(
        "board.patch",
        {"ops": [{"op_id": "s1", "kind": "stroke", "points": [100, 100, 900, 600]}]},
    )
    return app, runtime


async def test_export_makes_the_png_artifact_and_asks_to_save_it_showing_the_outcome() -> None:
    _, runtime = await drawn()
    await runtime.send_surface_event("board.export", {"export_id": "x1"})
    (asked,) = runtime.capabilities.requests
    assert (asked.capability, asked.instance_id) == ("artifact.save", INSTANCE)
    artifact_id = asked.input["artifact_id"]
    info = runtime.artifacts.infos[artifact_id]
    png = runtime.artifacts.contents[artifact_id]
    assert (info.media_type, info.name, info.instance_id) == (
        "image/png",
        "Sketch - exported.png",
        INSTANCE,
    )
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert info.sha256 == hashlib.sha256(png).hexdigest()
    surface = runtime.surfaces.of(INSTANCE)
    assert surface is not None
    assert surface.state["export"] == {
        "export_id": "x1",
        "status": "completed",
        "artifact_id": artifact_id,
        "sha256": info.sha256,
    }
    assert surface.state["phase"] == "drawing"  # the board stays open to draw on


async def test_the_png_exported_is_the_one_a_submit_renders() -> None:
    app, runtime = await drawn()
    await runtime.send_surface_event("board.export", {"export_id": "x1"})
    exported = runtime.artifacts.contents[runtime.capabilities.requests[0].input["artifact_id"]]
    submitted = await app._submitted(INSTANCE, "approval")
    assert runtime.artifacts.contents[submitted.artifact_id] == exported


async def test_a_refused_save_is_shown_with_its_status_and_code() -> None:
    _, runtime = await drawn()
    runtime.capabilities.set_result("artifact.save", "cancelled_by_user", "cancelled_by_user")
    await runtime.send_surface_event("board.export", {"export_id": "x1"})
    surface = runtime.surfaces.of(INSTANCE)
    assert surface is not None
    export = surface.state["export"]
    assert (export["status"], export["code"]) == ("cancelled_by_user", "cancelled_by_user")


async def test_a_later_export_leaves_nothing_of_an_earlier_ones_outcome() -> None:
    _, runtime = await drawn()
    runtime.capabilities.set_result("artifact.save", "policy_denied", "policy_denied")
    await runtime.send_surface_event("board.export", {"export_id": "x1"})
    runtime.capabilities.set_result("artifact.save")
    await runtime.send_surface_event("board.export", {"export_id": "x2"})
    surface = runtime.surfaces.of(INSTANCE)
    assert surface is not None
    assert "code" not in surface.state["export"]
    assert surface.state["export"]["status"] == "completed"


async def test_a_repeated_export_answers_its_outcome_again_and_makes_nothing_new() -> None:
    _, runtime = await drawn()
    await runtime.send_surface_event("board.export", {"export_id": "x1"})
    artifacts = dict(runtime.artifacts.infos)
    await runtime.send_surface_event("board.export", {"export_id": "x1"})
    assert runtime.artifacts.infos == artifacts
    assert len(runtime.capabilities.requests) == 1


@pytest.mark.parametrize("data", [{}, {"export_id": ""}, {"export_id": "../x"}, {"export_id": 7}])
async def test_an_export_without_a_proper_id_does_nothing(data: dict[str, Any]) -> None:
    _, runtime = await drawn()
    await runtime.send_surface_event("board.export", data)
    assert runtime.capabilities.requests == []
    assert all(i.media_type != "image/png" for i in runtime.artifacts.infos.values())


def test_an_artifact_is_named_from_the_boards_title_and_the_action_that_made_it() -> None:
    assert artifact_name("Kitchen plan", "exported", ".png") == "Kitchen plan - exported.png"
    assert artifact_name("Kitchen plan", "submitted", ".json") == "Kitchen plan - submitted.json"
    # What a name may not hold (a path, a control character) is a space; empty is the app's.
    assert artifact_name("a/b\\c\x00d\u200be", "exported", ".png") == "a b c d e - exported.png"
    assert artifact_name(" ./.. ", "exported", ".png") == "Whiteboard - exported.png"
    long = artifact_name("x" * 200, "submitted", ".json")
    assert len(long) <= 128 and long.endswith(" - submitted.json")
