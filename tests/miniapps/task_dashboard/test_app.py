"""The Task Dashboard's logic through the SDK's testkit only: no runtime, no processes."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

from lineup.miniapps.task_dashboard import TaskDashboard
from lineup.miniapps.task_dashboard._app import OPEN_WAIT_S
from lineup.sdk import protocol as p
from lineup.sdk import testkit
from lineup.sdk.testkit import CallRecord, FakeRuntime

INSTANCE = testkit.DEFAULT_INSTANCE
OPEN = "task-dashboard.open"
UPDATE = "task-dashboard.update"
TASK = {"task_id": "t1", "title": "Write the report"}


def ui_event(kind: str) -> p.UiEvent:
    return p.UiEvent(instance_id=INSTANCE, event={"kind": kind})


def view(task: dict[str, Any], actions: list[str]) -> dict[str, Any]:
    """The view as the Shell's `task.dashboard` component expects it: its tab's label is the
    task's title."""
    return {"kind": "task.dashboard", "label": task["title"], "task": task, "actions": actions}


async def opened(
    runtime: FakeRuntime | None = None, **task: Any
) -> tuple[TaskDashboard, FakeRuntime, CallRecord]:
    """A started dashboard showing `TASK` (or `task`), and its open call."""
    app = TaskDashboard()
    runtime = await testkit.start(app, runtime=runtime)
    record = await testkit.call_tool(app, OPEN, task or TASK)
    return app, runtime, record


async def test_open_shows_the_task_reports_progress_and_stays_running() -> None:
    _, runtime, record = await opened()
    assert record.status == "running"
    assert record.progress == [{"opened": "t1"}]
    task = {"task_id": "t1", "title": "Write the report", "progress": 0, "status": "todo"}
    assert runtime.ui.renders == [(INSTANCE, view(task, ["finish", "close"]))]
    assert runtime.session_data.get(INSTANCE) == (task, 1)


async def test_open_shows_the_status_it_was_given() -> None:
    _, runtime, _ = await opened(task_id="t1", title="Write", status="doing")
    assert runtime.ui.last is not None
    assert runtime.ui.last["task"]["status"] == "doing"


async def test_update_moves_progress_and_status_and_answers_the_summary() -> None:
    app, runtime, _ = await opened()
    update = await testkit.call_tool(app, UPDATE, {"task_id": "t1", "progress": 60})
    summary = {"task_id": "t1", "title": "Write the report", "progress": 60, "status": "doing"}
    assert (update.status, update.result) == ("completed", summary)
    assert runtime.ui.last == view(summary, ["finish", "close"])

    update = await testkit.call_tool(app, UPDATE, {"task_id": "t1", "progress": 80})
    assert update.result == {**summary, "progress": 80}
    assert runtime.session_data.get(INSTANCE) == ({**summary, "progress": 80}, 3)


@pytest.mark.parametrize(
    ("arguments", "status", "progress"),
    [
        ({"progress": 60}, "doing", 60),  # never "To do" at 60 %
        ({"progress": 60, "status": "todo"}, "doing", 60),
        ({"progress": 100}, "done", 100),
        ({"status": "done"}, "done", 100),
        ({"progress": 0, "status": "doing"}, "doing", 0),
        ({"progress": 0}, "todo", 0),
    ],
)
async def test_the_status_follows_the_progress(
    arguments: dict[str, Any], status: str, progress: int
) -> None:
    app, runtime, _ = await opened()
    update = await testkit.call_tool(app, UPDATE, {"task_id": "t1", **arguments})
    assert update.result is not None
    assert (update.result["status"], update.result["progress"]) == (status, progress)
    assert runtime.ui.last is not None
    assert runtime.ui.last["task"]["status"] == status


async def test_an_update_to_done_fills_the_bar_and_leaves_only_close() -> None:
    app, runtime, _ = await opened()
    update = await testkit.call_tool(
        app, UPDATE, {"task_id": "t1", "progress": 30, "status": "done"}
    )
    done = {"task_id": "t1", "title": "Write the report", "progress": 100, "status": "done"}
    assert update.result == done
    assert runtime.ui.last == view(done, ["close"])


@pytest.mark.parametrize(
    "arguments",
    [
        {"task_id": "t1", "progress": 101},
        {"task_id": "t1", "progress": -1},
        {"task_id": "t1", "status": "paused"},
        {"task_id": "t1", "note": "unknown field"},
        {"progress": 10},
        {"task_id": "", "progress": 10},
    ],
)
async def test_a_bad_update_input_is_refused_and_changes_nothing(arguments: dict[str, Any]) -> None:
    app, runtime, _ = await opened()
    renders = list(runtime.ui.renders)
    update = await testkit.call_tool(app, UPDATE, arguments)
    assert (update.status, update.error_code) == ("failed", "tool_input_invalid")
    assert runtime.ui.renders == renders
    assert runtime.session_data.get(INSTANCE)[1] == 1


async def test_an_update_of_a_task_that_is_not_shown_fails_with_app_instance_not_found() -> None:
    app, runtime, _ = await opened()
    update = await testkit.call_tool(app, UPDATE, {"task_id": "t2", "progress": 10})
    assert (update.status, update.error_code) == ("failed", "app_instance_not_found")
    assert runtime.session_data.get(INSTANCE)[0] == {
        "task_id": "t1",
        "title": "Write the report",
        "progress": 0,
        "status": "todo",
    }


async def test_an_update_before_any_open_fails_with_app_instance_not_found(
    autojump_clock: trio.testing.MockClock,
) -> None:
    app = TaskDashboard()
    await testkit.start(app)
    started = trio.current_time()
    update = await testkit.call_tool(app, UPDATE, {"task_id": "t1", "progress": 10})
    assert update.error_code == "app_instance_not_found"
    assert trio.current_time() - started == pytest.approx(OPEN_WAIT_S)  # it waited, bounded


async def test_an_update_that_arrives_before_its_open_shows_the_task_waits_for_it() -> None:
    """The runtime hands the open over first, but the two handlers run concurrently: the
    update must not fail because it ran before the open had shown the task."""
    app = TaskDashboard()
    runtime = await testkit.start(app)
    done: list[CallRecord] = []

    async def update() -> None:
        done.append(await testkit.call_tool(app, UPDATE, {"task_id": "t1", "progress": 60}))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(update)
        await trio.testing.wait_all_tasks_blocked()  # the update is waiting for a task
        assert done == []
        await testkit.call_tool(app, OPEN, TASK)
    [record] = done
    assert (record.status, record.result) == (
        "completed",
        {"task_id": "t1", "title": "Write the report", "progress": 60, "status": "doing"},
    )
    data, _ = runtime.session_data.get(INSTANCE)
    assert data is not None
    assert data["progress"] == 60


async def test_finish_then_close_completes_the_open_call_and_closes_the_instance() -> None:
    app, runtime, record = await opened()
    await app.on_ui_event(ui_event("task.finish"))
    await runtime.settle()
    done = {"task_id": "t1", "title": "Write the report", "progress": 100, "status": "done"}
    assert runtime.ui.last == view(done, ["close"])
    assert record.status == "running"  # finishing is not closing
    assert runtime.lifecycle.requests == []

    await app.on_ui_event(ui_event("task.close"))
    await runtime.settle()
    assert (record.status, record.result) == ("completed", {"status": "completed"})
    assert runtime.lifecycle.requests == [(INSTANCE, "close")]
    assert runtime.instances == set()


async def test_close_without_finishing_asks_to_confirm_and_closes_once_approved() -> None:
    app, runtime, record = await opened()
    await testkit.call_tool(app, UPDATE, {"task_id": "t1", "progress": 60})
    await app.on_ui_event(ui_event("task.close"))
    await runtime.settle()
    asked = runtime.interactions.last
    assert asked is not None
    assert (asked.kind, asked.instance_id, asked.parent_call_id) == (
        "confirm",
        INSTANCE,
        record.call_id,
    )
    assert (record.status, runtime.lifecycle.requests) == ("running", [])  # not yet

    await app.on_ui_event(ui_event("task.close"))  # a second click asks nothing more
    await runtime.settle()
    assert len(runtime.interactions.asked) == 1

    runtime.interactions.answer(asked.interaction_id, {"approved": True})
    await runtime.settle()
    assert (record.status, record.result) == ("completed", {"status": "cancelled"})
    assert runtime.lifecycle.requests == [(INSTANCE, "close")]


@pytest.mark.parametrize("answer", [{"approved": False}, None], ids=["declined", "expired"])
async def test_a_close_not_approved_keeps_the_task_open_and_can_be_asked_again(
    answer: dict[str, Any] | None,
) -> None:
    app, runtime, record = await opened()
    await app.on_ui_event(ui_event("task.close"))
    await runtime.settle()
    asked = runtime.interactions.last
    assert asked is not None
    if answer is None:
        runtime.interactions.end(asked.interaction_id, "expired", "operation_expired")
    else:
        runtime.interactions.answer(asked.interaction_id, answer)
    await runtime.settle()
    assert (record.status, runtime.lifecycle.requests) == ("running", [])

    await app.on_ui_event(ui_event("task.close"))
    await runtime.settle()
    assert len(runtime.interactions.asked) == 2  # asked afresh


async def test_an_instance_closed_by_the_runtime_is_no_longer_rendered() -> None:
    """Closed from the app switcher, the instance's open call ends `app_closed`: a later view
    refresh must not render it again (the runtime would answer app_instance_not_found)."""
    app, runtime, record = await opened()
    await app.on_tool_cancelled(record.call_id, "app_closed")
    shown = len(runtime.ui.renders)
    await app.on_view_refresh()
    await runtime.settle()
    assert len(runtime.ui.renders) == shown


async def test_an_update_after_a_restart_restores_the_task_from_session_data_first() -> None:
    _, runtime, _ = await opened()
    app = TaskDashboard()  # the old process is gone; a new one serves the same runtime
    await testkit.start(app, runtime=runtime)
    moved = await testkit.call_tool(app, UPDATE, {"task_id": "t1", "progress": 60})
    summary = {"task_id": "t1", "title": "Write the report", "progress": 60, "status": "doing"}
    assert (moved.status, moved.result) == ("completed", summary)
    assert runtime.session_data.get(INSTANCE) == (summary, 2)
    other = await testkit.call_tool(app, UPDATE, {"task_id": "t9", "progress": 1})
    assert other.error_code == "app_instance_not_found"  # not the task this instance shows


async def test_a_reopened_call_with_the_same_task_restores_it_after_a_restart() -> None:
    _, runtime, _ = await opened()
    app = TaskDashboard()  # the old process is gone; a new one serves the same runtime
    await testkit.start(app, runtime=runtime)

    reopened = await testkit.call_tool(app, OPEN, {"task_id": "t1", "title": "A new title"})
    restored = {"task_id": "t1", "title": "Write the report", "progress": 0, "status": "todo"}
    assert reopened.status == "running"
    assert runtime.ui.last == view(restored, ["finish", "close"])
    assert runtime.session_data.get(INSTANCE) == (restored, 1)  # restored, not written anew


async def test_a_restart_keeps_the_progress_and_later_updates_still_write() -> None:
    first, runtime, _ = await opened()
    await testkit.call_tool(first, UPDATE, {"task_id": "t1", "progress": 60, "status": "doing"})
    app = TaskDashboard()
    await testkit.start(app, runtime=runtime)
    await testkit.call_tool(app, OPEN, TASK)
    shown = {"task_id": "t1", "title": "Write the report", "progress": 60, "status": "doing"}
    assert runtime.ui.last == view(shown, ["finish", "close"])

    update = await testkit.call_tool(app, UPDATE, {"task_id": "t1", "progress": 80})
    assert update.result == {**shown, "progress": 80}
    assert runtime.session_data.get(INSTANCE) == ({**shown, "progress": 80}, 3)


async def test_a_write_that_lost_a_race_rereads_the_revision_and_writes_again() -> None:
    app, runtime, _ = await opened()
    runtime.session_data.put(INSTANCE, {"task_id": "t1", "written": "elsewhere"})  # revision 2
    update = await testkit.call_tool(app, UPDATE, {"task_id": "t1", "progress": 20})
    assert update.status == "completed"
    data, revision = runtime.session_data.get(INSTANCE)
    assert (data, revision) == (update.result, 3)


async def test_opening_another_task_on_the_instance_shows_it_fresh() -> None:
    first, runtime, _ = await opened()
    await testkit.call_tool(first, UPDATE, {"task_id": "t1", "progress": 60})
    app = TaskDashboard()
    await testkit.start(app, runtime=runtime)
    await testkit.call_tool(app, OPEN, {"task_id": "t2", "title": "Another"})
    fresh = {"task_id": "t2", "title": "Another", "progress": 0, "status": "todo"}
    assert runtime.ui.last == view(fresh, ["finish", "close"])
    assert runtime.session_data.get(INSTANCE) == (fresh, 3)


async def test_a_click_after_an_answer_it_was_not_told_of_acts_on_that_answer() -> None:
    app, runtime, record = await opened()
    await app.on_ui_event(ui_event("task.close"))
    asked = runtime.interactions.last
    assert asked is not None
    runtime.interactions.answer(asked.interaction_id, {"approved": True})
    runtime.interactions.untold.clear()  # the word of it was lost on the way
    await app.on_ui_event(ui_event("task.close"))
    await runtime.settle()
    assert (record.status, record.result) == ("completed", {"status": "cancelled"})
    assert runtime.lifecycle.requests == [(INSTANCE, "close")]
    assert len(runtime.interactions.asked) == 1  # nothing asked twice
