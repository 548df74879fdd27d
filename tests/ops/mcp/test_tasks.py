"""The tasks' table, without I/O: a task ends once, an error result fails it, a cancelled one
stays cancelled, a task is its requestor's only, and the table is bounded."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import mcp_types as types
import pytest

from lineup.ops.mcp._bridge import error_result
from lineup.ops.mcp._tasks import MAX_TASKS, MAX_TTL_MS, TaskTable, TaskUnknown

NOW = datetime(2026, 1, 1, tzinfo=UTC)
OK = types.CallToolResult(content=[types.TextContent(text="{}")], structured_content={})


def test_a_task_ends_once_completed_or_failed_with_the_code_as_its_status() -> None:
    table = TaskTable()
    done, refused = table.create("a", None, NOW), table.create("a", None, NOW)
    assert (done.status, done.view().status) == ("working", "working")
    done.end(OK)
    refused.end(error_result("tool_input_invalid", pointer="/x"))
    assert (done.status, done.result) == ("completed", OK)
    assert refused.status == "failed"
    assert refused.status_message == "error: tool_input_invalid at /x"
    done.end(error_result("late"))  # a second end changes nothing
    assert (done.status, done.result) == ("completed", OK)
    assert done.ended.is_set() and refused.ended.is_set()


def test_a_cancelled_task_stays_cancelled_and_an_ended_one_cannot_be_cancelled() -> None:
    table = TaskTable()
    task = table.create("a", None, NOW)
    task.cancel()
    assert task.scope.cancel_called and task.status == "cancelled"
    task.end(OK)
    assert (task.status, task.result) == ("cancelled", None)
    with pytest.raises(ValueError, match="cancelled"):
        task.cancel()


def test_a_task_is_its_requestors_only() -> None:
    table = TaskTable()
    task = table.create("a", None, NOW)
    assert table.get("a", task.task_id, NOW) is task
    with pytest.raises(TaskUnknown):
        table.get("b", task.task_id, NOW)
    assert table.of("b", NOW) == [] and table.of("a", NOW) == [task]


def test_an_ended_task_goes_after_its_ttl_and_a_running_one_stays() -> None:
    table = TaskTable()
    ended, running = table.create("a", 1000, NOW), table.create("a", 1000, NOW)
    ended.end(OK)
    later = NOW + timedelta(seconds=2)
    with pytest.raises(TaskUnknown):
        table.get("a", ended.task_id, later)
    assert table.get("a", running.task_id, later) is running
    assert table.create("a", 10**12, NOW).ttl_ms == MAX_TTL_MS


def test_the_table_is_bounded_and_makes_room_only_from_ended_tasks() -> None:
    table = TaskTable()
    tasks = [table.create("a", None, NOW) for _ in range(MAX_TASKS)]
    with pytest.raises(OverflowError):
        table.create("a", None, NOW)
    tasks[3].end(OK)
    table.create("a", None, NOW)
    assert len(table) == MAX_TASKS
    with pytest.raises(TaskUnknown):
        table.get("a", tasks[3].task_id, NOW)
