"""The user at the Shell, for the e2e tests of the capability gateway: a peer of the
hostbridge's kind, named `hostbridge`, in a tree without the real one. It receives what the
gateway tells the hostbridge (the prompts, the provider runs, their ends) and answers as the
Shell would, with `gateway.ui.*` requests.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TypeVar

import trio

from lineup.actors.gateway.messages import (
    PickedFile,
    PromptAnswerRequest,
    ProviderDoneRequest,
    UiAccepted,
)
from lineup.actors.kernel import ActorKind, Bus, Envelope, Identity, Message, Outcome
from lineup.hostbridge.messages import (
    CapabilityEndedEvent,
    CapabilityPromptEvent,
    CapabilityPromptView,
    ProviderRunEvent,
    ProviderRunView,
)
from lineup.sdk import MiniApp
from lineup.sdk.manifest import manifest_json
from lineup.sdk.tools import manifest_of
from lineup.supervisor._runtime import RuntimeOptions, plan_runtime
from lineup.tests.support.capability_app import CapAllow, CapApp, CapDeny
from lineup.tests.support.runtime import Runtime, supervise

WAIT: Final = 20.0
T = TypeVar("T")


@dataclass
class User:
    """The user at the Shell: what the gateway told the hostbridge, and the answers."""

    bus: Bus
    events: trio.MemoryReceiveChannel[Message]
    prompts: list[CapabilityPromptView] = field(default_factory=list)
    runs: list[ProviderRunView] = field(default_factory=list)
    ended: dict[str, str] = field(default_factory=dict)  # id -> outcome

    async def _until(self, found: Callable[[], T | None]) -> T:
        with trio.fail_after(WAIT):
            while (hit := found()) is None:
                event = await self.events.receive()
                if isinstance(event, CapabilityPromptEvent):
                    self.prompts.append(event.prompt)
                elif isinstance(event, ProviderRunEvent):
                    self.runs.append(event.run)
                elif isinstance(event, CapabilityEndedEvent):
                    self.ended[event.id] = event.outcome
            return hit

    async def prompt(self, capability: str, seen: int) -> CapabilityPromptView:
        """The next prompt for `capability` after the first `seen` prompts."""
        return await self._until(
            lambda: next((p for p in self.prompts[seen:] if p.capability == capability), None)
        )

    async def prompts_of(self, app_scope: str, count: int) -> list[CapabilityPromptView]:
        """The first `count` prompts of `app_scope`'s, once that many were shown."""

        def mine() -> list[CapabilityPromptView] | None:
            found = [p for p in self.prompts if p.app_scope == app_scope]
            return found[:count] if len(found) >= count else None

        return await self._until(mine)

    async def run(self, capability: str, seen: int) -> ProviderRunView:
        return await self._until(
            lambda: next((r for r in self.runs[seen:] if r.capability == capability), None)
        )

    async def end_of(self, some_id: str) -> str:
        return await self._until(lambda: self.ended.get(some_id))

    async def answer(self, prompt_id: str, decision: str) -> UiAccepted:
        request = PromptAnswerRequest.model_validate({"prompt_id": prompt_id, "decision": decision})
        return await self.bus.request("gateway", request, expect=UiAccepted)

    async def done(self, run_id: str, status: str, file: PickedFile | None = None) -> UiAccepted:
        request = ProviderDoneRequest.model_validate(
            {"run_id": run_id, "status": status, "file": file}
        )
        return await self.bus.request("gateway", request, expect=UiAccepted)


def _entry(app: type[MiniApp], data_dir: Path) -> dict[str, str]:
    scope = manifest_of(app).app_scope
    manifest = data_dir / f"{scope}.json"
    manifest.write_text(manifest_json(manifest_of(app)))
    return {
        "app_scope": scope,
        "manifest": str(manifest),
        "entry": f"{app.__module__}:{app.__qualname__}",
        "title": f"{scope} title",
    }


async def start_with_user(
    nursery: trio.Nursery,
    data_dir: Path,
    capabilities: dict[str, Any],
    apps: tuple[type[MiniApp], ...] = (CapApp, CapDeny, CapAllow),
) -> tuple[Runtime, User]:
    """The runtime (no demo Agent) with `apps` and the host's `capabilities` configuration, in
    which `User` takes the hostbridge's place (the Shell's socket is not what is tested)."""
    data_dir.mkdir(parents=True, exist_ok=True)
    rt = data_dir / "rt"
    rt.mkdir(mode=0o700, exist_ok=True)
    options = RuntimeOptions(
        data_dir=rt,
        demo_agent=False,
        extra_apps=tuple(_entry(app, data_dir) for app in apps),
        capabilities=capabilities,
    )
    plan = plan_runtime(options)
    specs = [spec for spec in plan.specs if spec.name != "hostbridge"]
    supervisor = await supervise(nursery, plan, rt, specs)
    send, receive = trio.open_memory_channel[Message](1000)

    def told(env: Envelope) -> Outcome:
        # What a test waits for; the rest (views, apps, interactions) is not this test's.
        if isinstance(env.body, CapabilityPromptEvent | ProviderRunEvent | CapabilityEndedEvent):
            send.send_nowait(env.body)
        return None

    bus: Bus = await nursery.start(
        supervisor.attach, Identity(ActorKind.HOSTBRIDGE, "hostbridge"), told
    )
    return Runtime(supervisor, plan.shell_url, plan.appserver_url), User(bus, receive)
