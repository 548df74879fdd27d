"""The Task Dashboard announces a task done in the background with `notification.show` (issue
14), through the SDK's testkit only: the update is answered first, the request names the
task's title, and a task done in front, or already done, asks for nothing."""

from __future__ import annotations

from lineup.miniapps.task_dashboard import TaskDashboard
from lineup.sdk import testkit
from lineup.sdk.testkit import FakeRuntime

INSTANCE = testkit.DEFAULT_INSTANCE
TASK = {"task_id": "t1", "title": "Write the report"}


async def opened() -> tuple[TaskDashboard, FakeRuntime]:
    app = TaskDashboard()
    runtime = await testkit.start(app)
    await testkit.call_tool(app, "task-dashboard.open", TASK)
    return app, runtime


async def test_a_task_done_in_the_background_is_announced_after_the_agent_is_answered() -> None:
    app, runtime = await opened()
    runtime.states[INSTANCE] = "background"
    done = await testkit.call_tool(app, "task-dashboard.update", {"task_id": "t1", "progress": 100})
    assert done.status == "completed"
    assert done.result == {**TASK, "progress": 100, "status": "done"}
    (asked,) = runtime.capabilities.requests
    assert asked.capability == "notification.show" and asked.instance_id == INSTANCE
    assert asked.input == {"title": "Task done", "body": "Write the report"}
    assert asked.purpose  # said why, as text


async def test_a_task_done_in_front_or_not_done_asks_for_nothing() -> None:
    app, runtime = await opened()
    await testkit.call_tool(app, "task-dashboard.update", {"task_id": "t1", "progress": 100})
    runtime.states[INSTANCE] = "background"
    await testkit.call_tool(app, "task-dashboard.update", {"task_id": "t1", "progress": 40})
    assert runtime.capabilities.requests == []


async def test_a_task_already_done_is_not_announced_again() -> None:
    app, runtime = await opened()
    runtime.states[INSTANCE] = "background"
    await testkit.call_tool(app, "task-dashboard.update", {"task_id": "t1", "status": "done"})
    await testkit.call_tool(app, "task-dashboard.update", {"task_id": "t1", "progress": 100})
    assert len(runtime.capabilities.requests) == 1


async def test_a_refused_notification_changes_nothing_for_the_task() -> None:
    app, runtime = await opened()
    runtime.states[INSTANCE] = "background"
    runtime.capabilities.set_result("notification.show", "permission_denied", "permission_denied")
    done = await testkit.call_tool(app, "task-dashboard.update", {"task_id": "t1", "progress": 100})
    assert done.status == "completed"
    assert runtime.session_data.get(INSTANCE)[0] == {**TASK, "progress": 100, "status": "done"}


def test_the_manifest_requests_notification_show() -> None:
    assert TaskDashboard.app_info.requested_capabilities == ("notification.show",)
