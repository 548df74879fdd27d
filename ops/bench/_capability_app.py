"""The capability bench's MiniApp (it runs in its own sandboxed process, so it imports the SDK
only): one tool that makes `count` `notification.show` requests one after another and times
each, from just before `capabilities.request` to its `completed` result, on the app's own
monotonic clock."""

from __future__ import annotations

import time

from pydantic import BaseModel, ConfigDict, Field

from lineup.sdk import AppContext, AppInfo, MiniApp, ToolCall, tool

__all__ = ["CapabilityBenchApp"]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class RunInput(_Model):
    count: int = Field(ge=1, le=10_000)


class RunOutput(_Model):
    seconds: tuple[float, ...]
    statuses: tuple[str, ...]  # each status not "completed", at most one of each


class CapabilityBenchApp(MiniApp):
    app_info = AppInfo(
        app_scope="bench-cap",
        version="1.0.0",
        kind="bundled-reference",
        requested_capabilities=("notification.show",),
    )

    async def start(self, app: AppContext) -> None:
        self.app = app

    @tool("bench-cap.run", handling="launch", input=RunInput, output=RunOutput, timeout_ms=600_000)
    async def run(self, call: ToolCall[RunInput]) -> RunOutput:
        seconds: list[float] = []
        other: set[str] = set()
        for n in range(call.input.count):
            start = time.perf_counter()
            result = await self.app.capabilities.request(
                "notification.show",
                "bench",
                {"title": f"n{n}"},
                instance_id=call.instance_id,
                request_id=f"bench-{call.call_id}-{n}"[:200],
            )
            seconds.append(time.perf_counter() - start)
            if result.status != "completed":
                other.add(f"{result.status}:{result.code}")
        return RunOutput(seconds=tuple(seconds), statuses=tuple(sorted(other)))
