"""The Task Dashboard: shows the Agent's task, its progress and state, and a close action.

`task-dashboard.open` (handling `launch`) opens an instance for one task and completes when the
user is done with it: `completed` if the task was finished, `cancelled` if the user closed it
early. `task-dashboard.update` (handling `operation`) moves the task's progress or state and
answers the task's summary; the state follows the progress (`_settled`: never "To do" once
begun, "Done" at 100 %). Closing a task that is not done first asks the user to `confirm`
(`sdk.ui.request`, tied to the open call); only an approval closes it. The view's top-level
`label` (the task's title) names the instance's tab. Everything goes through the SDK: progress
and results are reported to the runtime, which alone talks to the Agent; the view is rendered
by the Shell's trusted component from the state sent here.

A task that becomes done while its dashboard is in the background (the user is looking at
another app) is announced with the `notification.show` capability: the runtime asks the user
the first time (Always allow remembers it), then the Shell shows a toast (and the browser's
notification, if the user allowed the Shell those). The update is answered first, so the
Agent never waits on the user's answer; an outcome other than `completed` changes nothing.
"""

from __future__ import annotations

import logging
from typing import Any, Final, Literal

import trio
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from lineup.sdk import AppContext, AppInfo, ErrorCode, LineUpError, MiniApp, ToolCall, tool
from lineup.sdk import protocol as p
from lineup.sdk.interactions import ConfirmRequest

__all__ = ["TaskDashboard"]

log = logging.getLogger("lineup.task_dashboard")

Status = Literal["todo", "doing", "done"]
LABEL_MAX = 80  # the Shell's longest tab label
# An update that finds no task yet waits this long for its instance's open to show one: the
# runtime hands over the open first, but the two handlers run concurrently, and the open reads
# the instance's session data before it shows the task.
OPEN_WAIT_S: Final = 5.0
NOTIFY_PURPOSE: Final = "Tell you when a task finishes while you are in another app."


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class OpenInput(_Model):
    task_id: str = Field(min_length=1, max_length=100)
    title: str = Field(min_length=1, max_length=200)
    status: Status | None = None


class OpenOutput(_Model):
    status: Literal["completed", "cancelled", "failed"]


class UpdateInput(_Model):
    task_id: str = Field(min_length=1, max_length=100)
    progress: int | None = Field(default=None, ge=0, le=100)
    status: Status | None = None


class TaskSummary(_Model):
    task_id: str = Field(min_length=1, max_length=100)
    title: str = Field(min_length=1, max_length=200)
    progress: int = Field(ge=0, le=100)
    status: Status


class TaskDashboard(MiniApp):
    app_info = AppInfo(
        app_scope="task-dashboard",
        version="1.0.0",
        kind="bundled-reference",
        requested_capabilities=("notification.show",),
    )

    def __init__(self) -> None:
        self.tasks: dict[str, dict[str, Any]] = {}  # instance_id -> task
        self.revisions: dict[str, int] = {}  # instance_id -> session data revision we wrote
        self.open_calls: dict[str, ToolCall[OpenInput]] = {}  # instance_id -> its open call
        self.ended: set[str] = set()  # instances the runtime closed: never restored again
        self.confirming: dict[str, str] = {}  # instance_id -> its close confirmation asked
        self.shown: dict[str, trio.Event] = {}  # instance_id -> set once its open shows a task

    async def start(self, app: AppContext) -> None:
        self.app = app

    @tool(
        "task-dashboard.open",
        handling="launch",
        input=OpenInput,
        output=OpenOutput,
        timeout_ms=3_600_000,
        requires_foreground=True,
        description="Show a task to the user until they finish or close it.",
    )
    async def open(self, call: ToolCall[OpenInput]) -> OpenOutput | None:
        # The task lives in the instance's session data: a restarted process (or a re-delivered
        # call) shows it as it was, not as new.
        task = await self._task(call.instance_id)
        if task is None or task["task_id"] != call.input.task_id:
            task = _settled(
                {
                    "task_id": call.input.task_id,
                    "title": call.input.title,
                    "progress": 0,
                    "status": call.input.status or "todo",
                }
            )
            self.tasks[call.instance_id] = task
            await self._save(call.instance_id, task)
        self.shown.setdefault(call.instance_id, trio.Event()).set()
        self.open_calls[call.instance_id] = call
        await call.progress({"opened": call.input.task_id})
        await self._render(call.instance_id)
        return None  # completed when the user finishes or closes the task

    @tool(
        "task-dashboard.update",
        handling="operation",
        input=UpdateInput,
        output=TaskSummary,
        timeout_ms=30_000,
        description="Move the shown task's progress or state.",
    )
    async def update(self, call: ToolCall[UpdateInput]) -> TaskSummary | None:
        task = await self._task(call.instance_id)
        if task is None:  # its open may still be on its way to showing it
            with trio.move_on_after(OPEN_WAIT_S):
                await self.shown.setdefault(call.instance_id, trio.Event()).wait()
            task = await self._task(call.instance_id)
        if task is None or task["task_id"] != call.input.task_id:
            await call.fail("app_instance_not_found", "no such task shown")
            return None
        was_done = task["status"] == "done"
        if call.input.progress is not None:
            task["progress"] = call.input.progress
        if call.input.status is not None:
            task["status"] = call.input.status
        task.update(_settled(task))
        await self._save(call.instance_id, task)
        await self._render(call.instance_id)
        if was_done or task["status"] != "done":
            return TaskSummary(**task)
        await call.complete(TaskSummary(**task))  # the Agent is answered before anyone is asked
        await self._announce_done(call.instance_id, call.call_id, task)
        return None

    async def _announce_done(self, instance_id: str, call_id: str, task: dict[str, Any]) -> None:
        """A notification that the task is done, if its dashboard is in the background."""
        try:
            context = await self.app.refresh(instance_id)
            if context.state != "background":
                return  # in front: the user sees it; gone: nobody to tell
            result = await self.app.capabilities.request(
                "notification.show",
                NOTIFY_PURPOSE,
                {"title": "Task done", "body": str(task["title"])},
                instance_id=instance_id,
                # One announcement per update: a re-delivered call asks nothing new.
                request_id=f"done-{call_id}"[:200],
            )
        except LineUpError as exc:
            log.info("task_dashboard.not_announced code=%s", exc.code.value)
            return
        if result.status != "completed":
            log.info("task_dashboard.not_announced status=%s code=%s", result.status, result.code)

    async def on_ui_event(self, event: p.UiEvent) -> None:
        kind = event.event.get("kind")
        # Only a task this process shows: a click on a view from before a restart waits for
        # the open call to be delivered again, which alone can answer the Agent.
        task = self.tasks.get(event.instance_id)
        if task is None:
            return
        if kind == "task.finish":
            task["status"], task["progress"] = "done", 100
            await self._save(event.instance_id, task)
            await self._render(event.instance_id)
        elif kind == "task.close":
            if task["status"] == "done":
                await self._close(event.instance_id, task)
            else:
                await self._confirm_close(event.instance_id, task)

    async def _confirm_close(self, instance_id: str, task: dict[str, Any]) -> None:
        """Ask before closing a task that is not done; `on_interaction_updated` closes it
        once approved (and only then). A click while the question is open asks nothing more;
        one after an answer this process was not told of acts on that answer first."""
        if instance_id in self.confirming:
            record = await self.app.ui.find(self.confirming[instance_id])
            if record is None:
                self.confirming.pop(instance_id, None)
            else:
                if record.is_open:
                    return  # still asking
                await self.on_interaction_updated(record)
                if _approved(record):
                    return
        call = self.open_calls.get(instance_id)
        record = await self.app.ui.request(
            ConfirmRequest(
                kind="confirm",
                title="Close this task?",
                prompt=f"“{task['title']}” is not done yet. Close it anyway?",
                approve_label="Close task",
                cancel_label="Keep it open",
            ),
            instance_id=instance_id,
            parent_call_id=call.call_id if call is not None and not call.final else None,
        )
        self.confirming[instance_id] = record.interaction_id

    async def on_interaction_updated(self, record: p.InteractionRecord) -> None:
        instance_id = record.instance_id
        if record.kind != "confirm" or instance_id is None:
            return
        if self.confirming.get(instance_id) == record.interaction_id:
            del self.confirming[instance_id]
        # Stateless on purpose: an approval told to a restarted process still closes the task.
        if _approved(record):
            task = await self._task(instance_id)
            if task is not None:
                await self._close(instance_id, task)

    async def _close(self, instance_id: str, task: dict[str, Any]) -> None:
        call = self.open_calls.pop(instance_id, None)
        if call is not None and not call.final:
            done = task["status"] == "done"
            await call.complete(OpenOutput(status="completed" if done else "cancelled"))
        await self.app.lifecycle.request_close(instance_id)

    async def on_view_refresh(self) -> None:
        for instance_id in list(self.tasks):
            await self._render(instance_id)

    async def on_tool_cancelled(self, call_id: str, code: str) -> None:
        for instance_id, call in list(self.open_calls.items()):
            if call.call_id == call_id:
                del self.open_calls[instance_id]
                if code == "app_closed":  # its instance is gone: nothing left to show there
                    self.ended.add(instance_id)
                    self.shown.pop(instance_id, None)
                    self.tasks.pop(instance_id, None)
                    self.revisions.pop(instance_id, None)

    async def _task(self, instance_id: str) -> dict[str, Any] | None:
        """The instance's task: the one in memory, else the one its session data holds (this
        process restarted, or the instance was resumed), else None."""
        if instance_id in self.ended:
            return None
        if instance_id not in self.tasks:
            try:
                stored = await self.app.session_data.get(instance_id)
            except LineUpError as exc:
                if exc.code is ErrorCode.APP_INSTANCE_NOT_FOUND:
                    return None  # not (or no longer) an instance of ours
                raise
            self.revisions.setdefault(instance_id, stored.revision)
            try:
                task = TaskSummary.model_validate(stored.data).model_dump()
            except ValidationError:
                return None  # never written (or not by us): no task yet
            if instance_id in self.ended:
                return None  # closed while this read
            # Another handler may have restored it meanwhile: one copy, whoever read first.
            self.tasks.setdefault(instance_id, task)
        return self.tasks[instance_id]

    async def _save(self, instance_id: str, task: dict[str, Any]) -> None:
        """Write the task; only this process writes it, so a stale revision means our copy of
        the revision is old (a restart): re-read it and write again."""
        for attempt in range(2):
            try:
                self.revisions[instance_id] = await self.app.session_data.replace(
                    instance_id, dict(task), self.revisions.get(instance_id, 0)
                )
                return
            except LineUpError as exc:
                # Never report a change that was not saved: a second loss fails the call.
                if exc.code is not ErrorCode.STALE_REVISION or attempt == 1:
                    raise
                stored = await self.app.session_data.get(instance_id)
                self.revisions[instance_id] = stored.revision

    async def _render(self, instance_id: str) -> None:
        task = self.tasks[instance_id]
        await self.app.ui.render(
            instance_id,
            {
                "kind": "task.dashboard",
                "label": str(task["title"])[:LABEL_MAX],
                "task": dict(task),
                "actions": ["finish", "close"] if task["status"] != "done" else ["close"],
            },
        )


def _approved(record: p.InteractionRecord) -> bool:
    return record.result is not None and record.result.get("approved") is True


def _settled(task: dict[str, Any]) -> dict[str, Any]:
    """The task with its state following its progress: done is 100 % (and 100 % is done), any
    progress begun is "doing" (never "To do" at 60 %), none is what was said (todo or doing)."""
    progress, status = int(task["progress"]), task["status"]
    if status == "done" or progress >= 100:
        return {**task, "status": "done", "progress": 100}
    if progress > 0:
        return {**task, "status": "doing"}
    return {**task, "status": status}
