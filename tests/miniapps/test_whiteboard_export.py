"""The Whiteboard as the first user of capabilities (issue 14) and as a start target (issue 15),
through the SDK's testkit only: Export renders the board as a PNG artifact and asks for
`artifact.save`; a board the user opened from the Shell (`app.opened`) is one of its own."""

from __future__ import annotations

from lineup.miniapps.whiteboard import Whiteboard
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
