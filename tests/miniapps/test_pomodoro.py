"""The Pomodoro's logic through the SDK's testkit only: a focus period is a deadline operation
the runtime ends (the app never completes the call), the view is the app's display state in its
session data, and the interruption is passed on to the runtime."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from lineup.miniapps import pomodoro as pomodoro_package
from lineup.miniapps.pomodoro import Pomodoro
from lineup.sdk import ErrorCode, LineUpError, testkit
from lineup.sdk.manifest import load_manifest, manifest_json
from lineup.sdk.testkit import FakeRuntime
from lineup.sdk.tools import manifest_of

INSTANCE = testkit.DEFAULT_INSTANCE
RESULT = {"status": "completed", "minutes": 25.0}


async def focusing(minutes: float = 25) -> tuple[Pomodoro, FakeRuntime]:
    app = Pomodoro()
    runtime = await testkit.start(app)
    record = await testkit.call_tool(app, "pomodoro.focus", {"minutes": minutes}, call_id="f-1")
    assert record.status == "running"  # the runtime ends it, not the app
    return app, runtime


def test_the_shipped_manifest_is_the_one_the_code_declares() -> None:
    shipped = Path(pomodoro_package.__file__).parent / "manifest.json"
    assert shipped.read_text() == manifest_json(manifest_of(Pomodoro))
    tools = {t.method: t for t in load_manifest(shipped.read_bytes()).tools}
    assert (tools["pomodoro.focus"].handling, tools["pomodoro.focus"].requires_foreground) == (
        "launch", True,
    )  # fmt: skip
    interrupt = tools["pomodoro.interrupt"]
    assert interrupt.activation_requirement == "activation_not_required"


async def test_a_focus_period_is_a_runtime_operation_shown_from_its_session_data() -> None:
    before = time.time()
    _, runtime = await focusing(25)

    op = runtime.operations.operations["f-1"]
    assert before + 25 * 60 <= op.ends_at <= time.time() + 25 * 60
    assert runtime.calls["f-1"].progress[-1]["stage"] == "started"
    data, _ = runtime.session_data.get(INSTANCE)
    assert data is not None
    assert (data["call_id"], data["state"], data["ends_at"]) == ("f-1", "running", op.ends_at)
    view = runtime.ui.last
    assert view is not None and view["kind"] == "card"
    # The Shell counts down to the end itself: one render for the whole period.
    assert (view["text"], view["countdown"]) == (
        "Focusing", {"started_at": op.ends_at - 25 * 60, "ends_at": op.ends_at},
    )  # fmt: skip
    assert "progress" not in view
    with pytest.raises(LineUpError) as refused:  # the app cannot end it itself
        await runtime.complete("f-1", RESULT)
    assert refused.value.code is ErrorCode.PERMISSION_DENIED


async def test_the_runtimes_end_of_the_period_is_shown_done() -> None:
    _, runtime = await focusing(25)

    await runtime.fire_operation("f-1")

    assert runtime.calls["f-1"].result == RESULT
    data, _ = runtime.session_data.get(INSTANCE)
    assert data is not None and data["state"] == "completed"
    view = runtime.ui.last
    assert view is not None and (view["text"], view["progress"]) == ("Done", 1.0)


async def test_the_interruption_is_the_runtimes_and_is_shown_interrupted() -> None:
    app, runtime = await focusing(25)

    stop = await testkit.call_tool(app, "pomodoro.interrupt", {}, call_id="s-1")
    await runtime.settle()

    assert stop.result == {"interrupted": 1}
    assert runtime.calls["f-1"].error_code == "cancelled_by_user"
    data, _ = runtime.session_data.get(INSTANCE)
    assert data is not None and data["state"] == "interrupted"
    again = await testkit.call_tool(app, "pomodoro.interrupt", {}, call_id="s-2")
    assert again.result == {"interrupted": 0}


async def test_a_period_in_the_background_is_refused_foreground_required() -> None:
    app = Pomodoro()
    runtime = await testkit.start(app)
    runtime.states[INSTANCE] = "background"

    record = await testkit.call_tool(app, "pomodoro.focus", {"minutes": 5}, call_id="f-1")

    assert (record.status, record.error_code) == ("failed", "foreground_required")
    assert runtime.operations.operations == {}
    view = runtime.ui.last  # never an empty instance
    assert view is not None and view["text"] == "Not started: it starts only in front"


async def test_a_period_interrupted_before_it_started_leaves_no_empty_instance() -> None:
    app = Pomodoro()
    runtime = await testkit.start(app)
    start = app.app.operations.start

    async def the_user_first(call_id: str, ends_at: float, result: dict[str, object]) -> object:
        # The user's interruption came while the instance was still launching.
        await app.app.operations.interrupt(tool="pomodoro.focus")
        return await start(call_id, ends_at, result)

    app.app.operations.start = the_user_first  # type: ignore[method-assign,assignment]
    record = await testkit.call_tool(app, "pomodoro.focus", {"minutes": 5}, call_id="f-1")

    assert record.error_code == "cancelled_by_user"
    assert runtime.operations.operations == {}
    view = runtime.ui.last  # never an empty instance
    assert view is not None and view["text"] == "Interrupted before it started"


async def test_a_focus_handler_stopped_by_the_interruption_shows_it_never_started() -> None:
    # The runtime's cancellation stopped the handler while it asked for the operation: the
    # app's hook is told, and the instance says so rather than stay empty.
    app = Pomodoro()
    runtime = await testkit.start(app)
    app.starting["f-9"] = INSTANCE  # as the handler left it when it was stopped

    await app.on_tool_cancelled("f-9", "cancelled_by_user")

    view = runtime.ui.last
    assert view is not None and view["text"] == "Interrupted before it started"
    assert app.starting == {}
