"""A MiniApp that hears the Agent through `agent_messages` (seed 004 §5.4), to prove its rules
with real processes (tests/e2e/test_agent_messages.py).

Its manifest subscribes to the Agent's texts for one of its instances only (so a text for its
conversation is filtered out by the runtime's chain). At start it lists what waits in its inbox,
then subscribes with `include_pending`, and shows in its view what it was handed and how:
`listed` (what `list()` answered at start), `pending` (handed by the subscription at start: what
came while no process of it ran) and `live` (told while it ran). Its `mute` tool ends the
subscription; its `ack` tool lists what waits and acknowledges one message, twice."""

from __future__ import annotations

import logging

from pydantic import BaseModel, ConfigDict, Field

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


class AckInput(_Model):
    message_id: str = Field(min_length=1, max_length=200)


class AckOutput(_Model):
    listed: list[str]  # what `list()` answered before
    first: bool  # `acknowledge` removed it
    again: bool  # a second `acknowledge` of it


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
        self.unsubscribe = await app.agent_messages.subscribe(
            self._heard, types=[TEXT], include_pending=True
        )
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

    @tool("listener.mute", handling="direct", input=OpenInput, output=OpenOutput)
    async def mute(self, call: ToolCall[OpenInput]) -> OpenOutput:
        """End the subscription: what comes next waits in the inbox."""
        self.unsubscribe()
        return OpenOutput(instance_id=call.instance_id)

    @tool("listener.ack", handling="direct", input=AckInput, output=AckOutput)
    async def ack(self, call: ToolCall[AckInput]) -> AckOutput:
        """List what waits, then acknowledge one message twice."""
        page = await self.app.agent_messages.list()
        first = await self.app.agent_messages.acknowledge(call.input.message_id)
        again = await self.app.agent_messages.acknowledge(call.input.message_id)
        listed = [m.message_id for m in page.messages]
        return AckOutput(listed=listed, first=first, again=again)


def _text(message: p.AgentMessage) -> str:
    return str(message.payload.get("markdown"))


class Bystander(Listener):
    """The listener with the default subscriptions (its manifest declares none): it never
    asked for the conversation's texts (seed 004 §5.3), only its instance's reach it."""

    app_info = AppInfo(app_scope=SCOPE, version="1.0.0", kind="bundled-reference")
