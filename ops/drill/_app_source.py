"""The source of the tiny MiniApps the drill writes for its exercises (an app it installs, an
app it develops): a number model and a direct tool, `<scope>.echo`, that answers the number at
once, and whatever tools the exercise adds to the class."""

from __future__ import annotations

from typing import Final

__all__ = ["app_source"]

_SOURCE: Final = '''"""{doc}"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from lineup.sdk import AppContext, AppInfo, MiniApp, ToolCall, tool


class Numbered(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    n: int = Field(ge=0, le=10**9)


class DrillApp(MiniApp):
    app_info = AppInfo(app_scope="{scope}", version="{version}", kind="installed")

    async def start(self, app: AppContext) -> None:
        self.app = app

    @tool("{scope}.echo", handling="direct", input=Numbered, output=Numbered, timeout_ms=15_000)
    async def echo(self, call: ToolCall[Numbered]) -> Numbered:
        return Numbered(n=call.input.n)
'''


def app_source(doc: str, scope: str, version: str, tools: str = "") -> str:
    """The package's `__init__.py`: `tools` is more of the class's body, as written."""
    return _SOURCE.format(doc=doc, scope=scope, version=version) + tools
