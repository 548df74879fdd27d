"""A MiniApp that asks the user its own questions (`sdk.ui.request`) and tries to reach other
owners' ones, to prove that a MiniApp's question is its own: its answer goes to it alone, and
another's interaction (the Agent's, another app's) is not found. It shows what it learnt in its
view, which the test reads at the Shell."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from lineup.sdk import AppContext, AppInfo, LineUpError, MiniApp, ToolCall, tool
from lineup.sdk import protocol as p
from lineup.sdk.interactions import Action, ChoiceRequest


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class AskInput(_Model):
    mode: Literal["ask", "reach", "context"]
    other_id: str | None = Field(default=None, max_length=200)  # another owner's interaction
    other_call_id: str | None = Field(default=None, max_length=200)  # a call not this instance's


class Context(_Model):
    """What the runtime says this app and instance are (seed 003 §3 `MiniAppContext`)."""

    app_scope: str = Field(max_length=100)
    instance_id: str = Field(max_length=200)
    conversation_id: str = Field(max_length=200)
    state: str = Field(max_length=40)
    mode: str = Field(max_length=10)
    app_version: str = Field(max_length=64)


class AskOutput(_Model):
    interaction_id: str | None = Field(default=None, max_length=200)
    codes: tuple[str, ...] = ()
    context: Context | None = None


class Asker(MiniApp):
    app_info = AppInfo(app_scope="asker", version="1.0.0", kind="bundled-reference")

    async def start(self, app: AppContext) -> None:
        self.app = app
        self.answers: dict[str, list[dict[str, Any]]] = {}  # instance_id -> what it was told

    @tool("asker.run", handling="launch", input=AskInput, output=AskOutput, timeout_ms=60_000)
    async def run(self, call: ToolCall[AskInput]) -> AskOutput:
        if call.input.mode == "ask":
            record = await self.app.ui.request(
                ChoiceRequest(
                    kind="choice",
                    title="Pick one",
                    prompt="Which colour?",
                    mode="single-choice",
                    actions=(Action(id="red", label="Red"), Action(id="blue", label="Blue")),
                ),
                instance_id=call.instance_id,
                parent_call_id=call.call_id,
                request_id=f"ask:{call.call_id}",
            )
            await self._show(call.instance_id)
            return AskOutput(interaction_id=record.interaction_id)
        if call.input.mode == "context":
            facts = await self.app.refresh(call.instance_id)
            return AskOutput(
                context=Context(
                    app_scope=facts.app_scope,
                    instance_id=facts.instance_id,
                    conversation_id=facts.conversation_id or "",
                    state=facts.state,
                    mode=facts.mode,
                    app_version=self.app.app_version,
                )
            )
        codes: list[str] = []
        other = call.input.other_id or "none"
        other_call = call.input.other_call_id or "none"
        # (Answering as the user is not even sendable: `router.ui.*` is the hostbridge's alone,
        # and a MiniApp that sends it is stopped for misbehaving; the ACL's tests prove it.)
        for attempt in ("get", "cancel", "parent", "complete"):
            try:
                if attempt == "get":
                    await self.app.ui.get(other)
                elif attempt == "cancel":
                    await self.app.ui.cancel(other)
                elif attempt == "parent":
                    await self.app.ui.request(
                        {"kind": "notice", "title": "t", "message": "m"},
                        instance_id=call.instance_id,
                        parent_call_id=other_call,
                    )
                else:  # the Agent's interactive call is the runtime's, never an app's
                    sink: Any = call._sink
                    await sink.complete(other_call, {"approved": True})
                codes.append("ok")
            except LineUpError as exc:
                codes.append(exc.code.value)
        return AskOutput(codes=tuple(codes))

    async def on_interaction_updated(self, record: p.InteractionRecord) -> None:
        if record.instance_id is None:
            return
        told: dict[str, Any] = {
            "id": record.interaction_id,
            "state": record.state,
            "result": record.result,
        }
        self.answers.setdefault(record.instance_id, []).append(told)
        await self._show(record.instance_id)

    async def _show(self, instance_id: str) -> None:
        await self.app.ui.render(
            instance_id, {"kind": "probe", "told": self.answers.get(instance_id, [])}
        )
