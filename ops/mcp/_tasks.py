"""The spec's tasks (MCP 2025-11-25) for `lineup mcp`, without MCP I/O: a tool call that waits
for the user outlives a client whose request timeout does not reset on progress.

Theory of operation
-------------------
A client that sees a tool's `execution.taskSupport` may send its `tools/call` with `task`: the
answer is then at once a task (`working`), and the call runs in the background exactly as a
plain `tools/call` would (one `lineup.v1.tool.call`, the same retry, the same dismissal of an
interactive call given up). The client polls `tasks/get` (each poll a short request, so no
request waits for the user), and asks `tasks/result` once the task has ended. Its progress
lines become the task's `statusMessage`.

A task's life is a table of legal moves (`MOVES`): `working` ends once, as `completed`,
`failed` (the call's result is `isError`: the spec's rule for tool calls; the text, with the
code, is the status message) or `cancelled` (`tasks/cancel`, which stops the call); an ended
task never moves again, and a cancelled one stays cancelled whatever the call does after.

`TaskTable` holds at most `MAX_TASKS`, each ended one until its ttl (the client's, bounded by
`MAX_TTL_MS`) has passed since its creation; a task is its requestor's alone (the connection
that created it: another client's id is not found). A new task beyond the bound, when none has
ended, is refused.
"""

from __future__ import annotations

import secrets
from collections.abc import Hashable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Final, Literal

import mcp_types as types
import trio

__all__ = [
    "DEFAULT_TTL_MS",
    "MAX_TASKS",
    "MAX_TTL_MS",
    "POLL_INTERVAL_MS",
    "RELATED_TASK",
    "TaskEntry",
    "TaskTable",
    "TaskUnknown",
]

Status = Literal["working", "completed", "failed", "cancelled"]
Event = Literal["complete", "fail", "cancel"]
MOVES: Final[dict[Status, dict[Event, Status]]] = {
    "working": {"complete": "completed", "fail": "failed", "cancel": "cancelled"},
    "completed": {},
    "failed": {},
    "cancelled": {},
}
MAX_TASKS: Final = 256  # held at once (running or ended, until their ttl)
DEFAULT_TTL_MS: Final = 15 * 60 * 1000  # kept this long after creation, unless asked less
MAX_TTL_MS: Final = 60 * 60 * 1000
POLL_INTERVAL_MS: Final = 1000  # the `pollInterval` suggested to the client
MAX_STATUS_CHARS: Final = 200  # of a status message
RELATED_TASK: Final = "io.modelcontextprotocol/related-task"  # the `_meta` key of a task's result


class TaskUnknown(KeyError):
    """No such task for this requestor (never was, another's, or past its ttl)."""


@dataclass
class TaskEntry:
    """One task: its state, and (once ended) the call's result."""

    task_id: str
    owner: Hashable
    created_at: datetime
    ttl_ms: int
    status: Status = "working"
    status_message: str | None = None
    last_updated_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    result: types.CallToolResult | None = None
    ended: trio.Event = field(default_factory=trio.Event)
    scope: trio.CancelScope = field(default_factory=trio.CancelScope)

    @property
    def terminal(self) -> bool:
        return not MOVES[self.status]

    def expired(self, now: datetime) -> bool:
        return now >= self.created_at + timedelta(milliseconds=self.ttl_ms)

    def say(self, message: str) -> None:
        """A progress line of the running call, as the status message."""
        if not self.terminal:
            self._touch(message)

    def end(self, result: types.CallToolResult) -> None:
        """The call's result: `completed`, or `failed` when it is an error. Ignored once ended
        (a cancelled task stays cancelled)."""
        if self.terminal:
            return
        text = next((c.text for c in result.content if isinstance(c, types.TextContent)), None)
        self._move("fail" if result.is_error else "complete", text if result.is_error else None)
        self.result = result

    def cancel(self) -> None:
        """`tasks/cancel`: cancelled now, and the call stopped. Raises `ValueError` once ended."""
        if self.terminal:
            raise ValueError(self.status)
        self._move("cancel", "cancelled by the client")
        self.scope.cancel()

    def view(self) -> types.Task:
        return types.Task(
            task_id=self.task_id,
            status=self.status,
            status_message=self.status_message,
            created_at=_iso(self.created_at),
            last_updated_at=_iso(self.last_updated_at),
            ttl=self.ttl_ms,
            poll_interval=POLL_INTERVAL_MS,
        )

    def _move(self, event: Event, message: str | None) -> None:
        self.status = MOVES[self.status][event]  # KeyError: an illegal move
        self._touch(message)
        self.ended.set()

    def _touch(self, message: str | None) -> None:
        if message is not None:
            self.status_message = message[:MAX_STATUS_CHARS]
        self.last_updated_at = datetime.now(UTC)


class TaskTable:
    """The tasks of one `lineup mcp`, by id, each its requestor's."""

    def __init__(self) -> None:
        self._tasks: dict[str, TaskEntry] = {}

    def __len__(self) -> int:
        return len(self._tasks)

    def create(self, owner: Hashable, ttl_ms: int | None, now: datetime) -> TaskEntry:
        """A new `working` task. Raises `OverflowError` when `MAX_TASKS` are held and none has
        ended (the oldest ended one makes room otherwise)."""
        self._prune(now)
        if len(self._tasks) >= MAX_TASKS:
            ended = next((k for k, t in self._tasks.items() if t.terminal), None)
            if ended is None:
                raise OverflowError("too many tasks")
            del self._tasks[ended]
        ttl = DEFAULT_TTL_MS if ttl_ms is None else max(0, min(ttl_ms, MAX_TTL_MS))
        task = TaskEntry(secrets.token_urlsafe(16), owner, now, ttl, last_updated_at=now)
        self._tasks[task.task_id] = task
        return task

    def get(self, owner: Hashable, task_id: str, now: datetime) -> TaskEntry:
        """The requestor's task `task_id`. Raises `TaskUnknown`."""
        self._prune(now)
        task = self._tasks.get(task_id)
        if task is None or task.owner != owner:
            raise TaskUnknown(task_id)
        return task

    def of(self, owner: Hashable, now: datetime) -> list[TaskEntry]:
        """The requestor's tasks, oldest first."""
        self._prune(now)
        return [t for t in self._tasks.values() if t.owner == owner]

    def _prune(self, now: datetime) -> None:
        # Only ended tasks go: a running one is bounded by its call's own bounds, and its
        # result is kept for the client that waits for it.
        for task_id in [k for k, t in self._tasks.items() if t.terminal and t.expired(now)]:
            del self._tasks[task_id]


def _iso(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")
