"""Draw and guess: a MiniApp with a Surface (web/), made with `lineup app new --surface`."""

from pydantic import BaseModel, Field

from lineup.sdk import AppContext, AppInfo, Entrypoint, MiniApp, ToolCall, protocol, tool


class HelloInput(BaseModel, frozen=True, extra="forbid"):
    name: str = Field(min_length=1, max_length=100, description="Who to greet")


class HelloOutput(BaseModel, frozen=True, extra="forbid"):
    greeting: str = Field(max_length=200)


class DrawAndGuess(MiniApp):
    app_info = AppInfo(
        app_scope="draw-and-guess",
        version="0.1.0",
        kind="installed",
        entrypoints=(Entrypoint(id="main", kind="surface", events=("wave",)),),
    )

    async def start(self, app: AppContext) -> None:
        self.app = app

    @tool(
        "draw-and-guess.hello",
        handling="launch",
        input=HelloInput,
        output=HelloOutput,
        description="Greet someone by name in the app's Surface.",
    )
    async def hello(self, call: ToolCall[HelloInput]) -> HelloOutput:
        greeting = f"Hello, {call.input.name}!"
        await self.app.surfaces.request_open(call.instance_id, state={"greeting": greeting})
        return HelloOutput(greeting=greeting)

    async def on_surface_event(self, event: protocol.SurfaceEvent) -> None:
        await self.app.surfaces.update(event.surface_id, {"waved": True})  # "wave", its one event
