"""A MiniApp that writes JSON which is not JSON (NaN, Infinity, a lone surrogate) into its
session data: through the SDK, which refuses it before sending, and as a raw bus frame, which
the runtime refuses `frame_malformed` (issue 11, finding 10). It shows the codes it got in its
view, which the test reads at the Shell."""

from __future__ import annotations

import math
from typing import Any, Literal

import trio
from pydantic import BaseModel, ConfigDict, Field

from lineup.sdk import AppContext, AppInfo, LineUpError, MiniApp, ToolCall, tool
from lineup.sdk import protocol as p


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class StrictInput(_Model):
    mode: Literal["session", "raw_frame"]


class StrictOutput(_Model):
    done: str = Field(max_length=100)


class StrictJson(MiniApp):
    app_info = AppInfo(app_scope="strict", version="1.0.0", kind="bundled-reference")

    async def start(self, app: AppContext) -> None:
        self.app = app

    @tool("strict.run", handling="launch", input=StrictInput, output=StrictOutput, timeout_ms=5_000)
    async def run(self, call: ToolCall[StrictInput]) -> StrictOutput:
        if call.input.mode == "raw_frame":
            await self._raw_frame(call.instance_id)
        data = self.app.session_data
        codes: list[str] = []
        revision = 0
        for value in ({"n": 1}, {"n": math.nan}, {"n": [math.inf]}, {"s": "\ud800"}):
            try:
                revision = await data.replace(call.instance_id, value, revision)
                codes.append("ok")
            except LineUpError as exc:
                codes.append(exc.code.value)
        current = await data.get(call.instance_id)
        await self.app.ui.render(
            call.instance_id,
            {
                "kind": "probe",
                "call_id": call.call_id,
                "codes": codes,
                "current": [current.data, current.revision],
            },
        )
        return StrictOutput(done="session")

    async def _raw_frame(self, instance_id: str) -> None:
        """What hostile code could write on its channel to focus: a request whose JSON holds a
        NaN (Python's `json` would take it; no other peer would)."""
        await self.app.session_data.get(instance_id)  # the channel to focus is open from now
        host: Any = self.app.inbox._host
        body = (
            f'{{"type":"{p.SessionDataReplaceRequest.TYPE}","instance_id":"{instance_id}",'
            '"data":{"n":NaN},"expected_revision":0}'
        )
        payload = f'{{"k":"q","id":999999,"b":{body}}}'.encode()
        await host.bus.connection("focus").channel.send(len(payload).to_bytes(4, "big") + payload)
        await trio.sleep_forever()  # the runtime stops this app: it broke the framing
