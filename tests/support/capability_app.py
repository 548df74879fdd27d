"""MiniApps that ask for capabilities (`sdk.capabilities.request`), for the e2e tests of the
capability gateway through the real tree (the user who answers is `capability_user`).

Each app has one tool, `<scope>.ask`, that makes `repeat` requests for one capability (from the
background, if asked: it sends its own instance back first) and returns every result as JSON;
`capapp` also has `capapp.pick`, a tool that declares `file.open` in its `permissions` (it
leaves the inventory when the app cannot use that capability). The apps differ in their scope
only, so a test's host policy can treat each its own way. Imports the SDK only: this module
is what the sandboxed app processes load.
"""

from __future__ import annotations

import json
import math
from typing import Final

import trio
from pydantic import BaseModel, ConfigDict, Field

from lineup.sdk import AppContext, AppInfo, LineUpError, MiniApp, ToolCall, tool

DECLARED: Final = ("notification.show", "file.open", "artifact.save")


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class AskInput(_Model):
    capability: str = Field(max_length=100)
    purpose: str = Field(max_length=300)
    input_json: str = Field(default="{}", max_length=4000)
    request_id: str = Field(max_length=100)
    repeat: int = Field(default=1, ge=1, le=5)
    give_up_after_s: float | None = None  # the app stops waiting (and never asks again)
    background: bool = False


class AskOutput(_Model):
    instance_id: str
    results_json: str  # a list of CapabilityResult dicts, one per request


class PickInput(_Model):
    note: str = Field(default="", max_length=100)


class PickOutput(_Model):
    ok: bool


def _app(scope: str) -> type[MiniApp]:
    class CapabilityApp(MiniApp):
        app_info = AppInfo(
            app_scope=scope,
            version="1.0.0",
            kind="bundled-reference",
            requested_capabilities=DECLARED,
        )

        async def start(self, app: AppContext) -> None:
            self.app = app

        @tool(
            f"{scope}.ask", handling="launch", input=AskInput, output=AskOutput, timeout_ms=60_000
        )
        async def ask(self, call: ToolCall[AskInput]) -> AskOutput:
            x = call.input
            if x.background:
                await self.app.lifecycle.request_background(call.instance_id)
            results = []
            for i in range(x.repeat):
                results.append({"error": "given_up"})
                with trio.move_on_after(x.give_up_after_s or math.inf):
                    try:
                        result = await self.app.capabilities.request(
                            x.capability,
                            x.purpose,
                            json.loads(x.input_json),
                            instance_id=call.instance_id,
                            request_id=x.request_id if i == 0 else f"{x.request_id}-{i}",
                        )
                        results[-1] = result.model_dump(mode="json")
                    except LineUpError as exc:
                        results[-1] = {"error": exc.code.value}
            return AskOutput(instance_id=call.instance_id, results_json=json.dumps(results))

        if scope == "capapp":

            @tool(
                "capapp.pick",
                handling="direct",
                input=PickInput,
                output=PickOutput,
                permissions=("file.open",),
            )
            async def pick(self, call: ToolCall[PickInput]) -> PickOutput:
                return PickOutput(ok=True)

    CapabilityApp.__name__ = CapabilityApp.__qualname__ = f"App_{scope.replace('-', '_')}"
    return CapabilityApp


CapApp = _app("capapp")  # the host's and the user's policy: the catalog's (ask)
CapDeny = _app("capdeny")  # the host's policy denies notification.show
CapAllow = _app("capallow")  # the host's policy allows notification.show
App_capapp, App_capdeny, App_capallow = CapApp, CapDeny, CapAllow  # their entry names
