"""A small task dashboard declared with the SDK (seed 003 §5.2), shared by the SDK's tests."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from lineup.sdk import AppContext, AppInfo, MiniApp, ToolCall, protocol, tool

Status = Literal["todo", "doing", "done"]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class OpenInput(_Model):
    """Show one task until the user closes it."""

    task_id: str = Field(min_length=1, max_length=100)
    title: str = Field(min_length=1, max_length=200, description="shown as the heading")
    status: Status | None = None


class OpenOutput(_Model):
    status: Literal["completed", "cancelled", "failed"]


class UpdateInput(_Model):
    task_id: str = Field(min_length=1, max_length=100)
    progress: int | None = Field(default=None, ge=0, le=100)
    status: Status | None = None


class TaskSummary(_Model):
    task_id: str
    title: str
    progress: int = Field(ge=0, le=100)
    status: Status
    note: str | None = None


class Dashboard(MiniApp):
    app_info = AppInfo(
        app_scope="task-dashboard",
        version="1.0.0",
        kind="bundled-reference",
        requested_capabilities=(),
        surface_required=False,
    )

    def __init__(self) -> None:
        self.tasks: dict[str, dict[str, Any]] = {}
        self.open_calls: dict[str, ToolCall[OpenInput]] = {}

    async def start(self, app: AppContext) -> None:
        self.app = app
        await self._render()

    @tool(
        "task-dashboard.open",
        handling="launch",
        input=OpenInput,
        output=OpenOutput,
        description="Show a task until the user closes it.",
    )
    async def open(self, call: ToolCall[OpenInput]) -> OpenOutput | None:
        task = call.input
        self.tasks[task.task_id] = {
            "task_id": task.task_id,
            "title": task.title,
            "progress": 0,
            "status": task.status or "todo",
        }
        self.open_calls[task.task_id] = call
        await call.progress({"stage": "shown"})
        await self._render()
        return None  # completed when the user closes the task

    @tool(
        "task-dashboard.update",
        handling="operation",
        input=UpdateInput,
        output=TaskSummary,
        activation="activation_not_required",
        timeout_ms=10_000,
    )
    async def update(self, call: ToolCall[UpdateInput]) -> TaskSummary | None:
        task = self.tasks.get(call.input.task_id)
        if task is None:
            await call.fail("task_not_found")
            return None
        if call.input.progress is not None:
            task["progress"] = call.input.progress
        if call.input.status is not None:
            task["status"] = call.input.status
        await self._render()
        return TaskSummary(**task)

    async def on_ui_event(self, event: protocol.UiEvent) -> None:
        if event.event.get("kind") != "task.close":
            return
        call = self.open_calls.pop(str(event.event.get("task_id")), None)
        if call is not None:
            done = self.tasks[call.input.task_id]["status"] == "done"
            await call.complete(OpenOutput(status="completed" if done else "cancelled"))

    async def _render(self) -> None:
        await self.app.ui.render(
            self.app.instance_id,
            {"kind": "task-dashboard", "tasks": sorted(self.tasks.values(), key=str)},
        )
