"""A MiniApp that hears the Agent through `agent_messages` (seed 004 §5.4), to prove its rules
with real processes (tests/e2e/test_agent_messages.py).

Its manifest subscribes to the Agent's texts for one of its instances only (so a text for its
conversation is filtered out by the runtime's chain). At start it lists what waits in its inbox,
then subscribes with `include_pending`, and shows in its view what it was handed and how:
`listed` (what `list()` answered at start), `pending` (handed by the subscription at start: what
came while no process of it ran), `live` (told while it ran), and `start` (its starts)."""

from __future__ import annotations

import logging

from pydantic import BaseModel, ConfigDict

from lineup.sdk import AppContext, AppInfo, LineUpError, MiniApp, ToolCall, tool
from lineup.sdk import protocol as p
from lineup.sdk.manifest import AgentSubscription

log = logging.getLogger("lineup.tests.listener")
SCOPE = "listener"
TEXT = "lineup.v1.text"


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class OpenInput(_Model):
    pass


class OpenOutput(_Model):
    instance_id: str


class Listener(MiniApp):
    app_info = AppInfo(
        app_scope=SCOPE,
        version="1.0.0",
        kind="bundled-reference",
        agent_subscriptions=(AgentSubscription(type=TEXT, scope="instance"),),
    )

    async def start(self, app: AppContext) -> None:
        self.app = app
        self.pending: list[str] = []
        self.live: list[str] = []
        self.starting = True
        page = await app.agent_messages.list()
        self.listed = [_text(m) for m in page.messages]
        await app.agent_messages.subscribe(self._heard, types=[TEXT], include_pending=True)
        self.starting = False
        await self._render()

    async def _heard(self, message: p.AgentMessage) -> None:
        if self.starting:
            self.pending.append(_text(message))
            return
        self.live.append(_text(message))
        await self._render()

    async def _render(self) -> None:
        view = {"kind": "listener", "listed": self.listed, "pending": self.pending}
        try:
            await self.app.ui.render(self.app.instance_id, {**view, "live": self.live})
        except LineUpError as exc:  # the instance is not up yet: its tool call renders
            log.info("listener.not_rendered code=%s", exc.code.value)

    @tool("listener.open", handling="launch", input=OpenInput, output=OpenOutput)
    async def open(self, call: ToolCall[OpenInput]) -> OpenOutput:
        await self._render()
        return OpenOutput(instance_id=call.instance_id)


def _text(message: p.AgentMessage) -> str:
    return str(message.payload.get("markdown"))
