"""A MiniApp that floods the runtime, to prove its quotas (tests/e2e/test_quotas.py).

An SDK app whose one tool, by mode, exhausts what a hostile app could: `apps.open` in a loop,
progress reports as fast as the bus lets it, frames its ACL denies on its control channel, or a
frame that breaks the framing there (those two go around the SDK, straight onto the channel's
socket, as hostile code would); or it exits, status 0, in the middle of its call. What it was
answered it shows in its view, which the test reads at the Shell.
"""

from __future__ import annotations

import os
from typing import Any, Literal

import trio
from pydantic import BaseModel, ConfigDict, Field

from lineup.actors.kernel import encode_frame
from lineup.sdk import AppContext, AppInfo, LineUpError, MiniApp, ToolCall, tool

OPENS = 20  # `apps.open` attempts in the `open_loop` mode (past the quota of 8)
DENIED = 300  # frames the ACL denies, in the `deny_loop` mode; requests refused as policy in
#               the `policy_loop` mode (`send_text`, which only the chat may send)
QUIET = 1.5  # seconds the `progress` mode waits after its last report before its result


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class FloodInput(_Model):
    mode: Literal["open_loop", "progress", "deny_loop", "policy_loop", "malformed", "exit"]
    reports: int = Field(default=0, ge=0, le=100_000)


class FloodOutput(_Model):
    sent: int


class Flood(MiniApp):
    app_info = AppInfo(app_scope="flood", version="1.0.0", kind="bundled-reference")

    async def start(self, app: AppContext) -> None:
        self.app = app

    @tool("flood.run", handling="launch", input=FloodInput, output=FloodOutput, timeout_ms=60_000)
    async def run(self, call: ToolCall[FloodInput]) -> FloodOutput:
        mode = call.input.mode
        if mode == "open_loop":
            codes = []
            for n in range(OPENS):
                try:
                    await self.app.apps.open("task-dashboard", request_id=f"{call.call_id}-{n}")
                    codes.append("ok")
                except LineUpError as exc:
                    codes.append(exc.code.value)
            await self.app.ui.render(call.instance_id, {"kind": "flood", "opens": codes})
            return FloodOutput(sent=OPENS)
        if mode == "progress":
            for n in range(call.input.reports):
                await call.progress({"n": n})
            await trio.sleep(QUIET)  # the last report is flushed in this quiet, not lost
            return FloodOutput(sent=call.input.reports)
        if mode == "exit":
            os._exit(0)  # ends by itself, mid-call, as if all were well
        await self.app.ui.render(call.instance_id, {"kind": "flood", "flooding": mode})
        try:
            await self._flood(mode)
        except LineUpError:
            pass  # its channel went away: it is being stopped
        await trio.sleep_forever()  # the runtime stops this app; the call ends without it
        raise AssertionError("unreachable")

    async def _flood(self, mode: str) -> None:
        if mode == "policy_loop":
            for n in range(DENIED):
                try:
                    await self.app.conversation.send_text(f"flood-{n}", "I am the user.")
                except LineUpError as exc:
                    if exc.code.value != "permission_denied":
                        return
            return
        channel = self._control_channel()
        if mode == "deny_loop":
            for n in range(DENIED):  # focus's request: the ACL denies it to a MiniApp
                body = {"type": "supervisor.child.start", "name": "miniapp:x", "config": {}}
                await channel.send(encode_frame("e", 10_000 + n, body))
        else:
            await channel.send(b"\x00\x00\x00\x05hello")  # a length prefix, then no JSON

    def _control_channel(self) -> Any:
        host: Any = self.app.inbox._host
        conn = host.bus.connection("supervisor")
        assert conn is not None
        return conn.channel
