"""The drill's dev reloads: a developer saving a `--dev-app` again and again under the faults.

Theory of operation: `prepare` writes a small development app (`drilldev`) in the drill's
folder and adds it to `lineup run` with `--dev-app`. During the load, `drive` saves it every few
seconds as a developer would, each save a new state of its code: every good state has the tool
`drilldev.echo` and a tool of its own, `drilldev.s<k>`, so each one changes the inventory; now
and then a save does not import (a syntax error, with a tool `drilldev.broken<k>` that must never
be seen: the watcher refuses it and the previous state keeps running). Between saves the Agent
calls `drilldev.echo`, so the app's process is reloaded while in use; the faults kill focus, the
watcher (`devwatch`) and the app in the middle of it. The last save is always a good one, and
quiescence waits until the Agent has been told of it.

The invariant, `dev_reloads_converge`, from the AppServer's record once the runtime stopped: the
last inventory the Agent got lists exactly the last good state's tools of the app, and no
inventory ever listed a tool of a state that does not import.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import trio

from lineup import wire

from ._app_source import app_source
from ._check import Invariant, to_agent
from ._exercise import QUIET_START_S, Setup, Stage, lineup_command

__all__ = ["DevReloads", "check_dev_reloads", "dev_tools"]

SCOPE: Final = "drilldev"
PACKAGE: Final = "drilldev"
_GAP_S: Final = (4.0, 10.0)  # between two saves (each changes the inventory)
_BROKEN: Final = 0.15  # of the saves do not import
INVENTORY: Final = "lineup.v1.client.inventory"

_STATE: Final = """
    @tool("{scope}.{name}", handling="direct", input=Numbered, output=Numbered, timeout_ms=15_000)
    async def state(self, call: ToolCall[Numbered]) -> Numbered:
        return Numbered(n={k})
"""
_BROKEN_TAIL: Final = "\n    def oops(self) -> None\n        pass\n"  # no colon: no import


def dev_tools(payload: dict[str, Any]) -> frozenset[str]:
    """The app's tools in one inventory payload."""
    tools = payload.get("tools") or []
    return frozenset(
        str(t.get("method"))
        for t in tools
        if isinstance(t, dict) and str(t.get("method", "")).startswith(f"{SCOPE}.")
    )


def check_dev_reloads(
    inventories: list[frozenset[str]], final: frozenset[str], broken: set[str]
) -> list[Invariant]:
    rule = Invariant(
        "dev_reloads_converge",
        "the last inventory the Agent got lists exactly the dev app's last saved tools, and no "
        "inventory ever listed a tool of a save that does not import",
    )
    if not inventories:
        rule.breach("the Agent got no inventory")
    elif inventories[-1] != final:
        rule.breach(f"the last inventory lists {sorted(inventories[-1])}, saved {sorted(final)}")
    seen_broken = {name for tools in inventories for name in tools if name in broken}
    for name in sorted(seen_broken):
        rule.breach(f"{name}: of a save that does not import, yet in an inventory")
    return [rule]


def _state(k: int, *, broken: bool) -> tuple[str, frozenset[str]]:
    """The source of save `k`, and the tools it declares."""
    name = f"broken{k}" if broken else f"s{k}"
    tools = _STATE.format(scope=SCOPE, name=name, k=k) + (_BROKEN_TAIL if broken else "")
    source = app_source(f"The drill's development app, save {k}.", SCOPE, f"0.{k}.0", tools)
    return source, frozenset({f"{SCOPE}.echo", f"{SCOPE}.{name}"})


@dataclass
class DevReloads:
    """The exercise (see the module's docstring)."""

    seed: int
    name: str = "dev_reloads"
    folder: Path | None = None
    saves: int = 0
    broken: set[str] = field(default_factory=set)  # tools of the saves that do not import
    final: frozenset[str] = frozenset()
    calls: int = 0
    _done: bool = False
    _read: int = 0  # how far into the Agent's messages `unsettled` has looked
    _last: frozenset[str] | None = None  # the app's tools in the newest inventory seen

    def prepare(self, setup: Setup) -> list[str]:
        self.folder = setup.data_dir / "dev_reloads" / PACKAGE
        self.folder.mkdir(parents=True, exist_ok=True)
        self._save(0, broken=False)
        manifest = self.folder / "manifest.json"  # as `lineup run` asks a developer to
        lineup_command("app", "manifest", str(self.folder), "--out", str(manifest))
        return ["--dev-app", str(self.folder)]

    def _save(self, k: int, *, broken: bool) -> None:
        assert self.folder is not None
        source, tools = _state(k, broken=broken)
        # As an editor saves: a new file renamed over the old one (never half a file).
        temporary = self.folder / f".__init__.py.{k}.tmp"
        temporary.write_text(source)
        temporary.replace(self.folder / "__init__.py")
        self.saves += 1
        if broken:
            self.broken |= tools - {f"{SCOPE}.echo"}
        else:
            self.final = tools

    async def drive(self, stage: Stage, seconds: float) -> None:
        rng = random.Random(self.seed + 29)
        deadline = trio.current_time() + seconds
        await stage.agent.inventory_known()
        await trio.sleep(QUIET_START_S)
        k = 1
        while trio.current_time() < deadline:
            await trio.sleep(rng.uniform(*_GAP_S))
            self._save(k, broken=rng.random() < _BROKEN)
            k += 1
            for _ in range(rng.randrange(1, 4)):
                await self._call(stage, rng)
        self._save(k, broken=False)  # the last save is a good one: it must be taken
        self._done = True

    async def _call(self, stage: Stage, rng: random.Random) -> None:
        self.calls += 1
        call_id = f"call-drill-{self.seed}-dev{self.calls}"
        payload = wire.ToolCallPayload(
            call_id=call_id,
            tool=f"{SCOPE}.echo",
            inventory_revision=stage.agent.revision or "",
            input={"n": rng.randrange(10**9)},
        )
        await stage.agent.post_call(stage.client, call_id, f"{SCOPE}.echo", payload)

    async def unsettled(self, stage: Stage) -> int:
        """1 until the Agent has been told of the last save (0 while the load runs)."""
        received = stage.agent.received
        for _, message in received[self._read :]:
            if message.get("type") == INVENTORY:
                self._last = dev_tools(message.get("payload") or {})
        self._read = len(received)
        return 0 if not self._done or self._last == self.final else 1

    def check(self, setup: Setup) -> list[Invariant]:
        return check_dev_reloads(_inventories(setup.runtime_dir), self.final, self.broken)

    def report(self) -> dict[str, Any]:
        return {
            "saves": self.saves,
            "saves_that_do_not_import": len(self.broken),
            "tool_calls": self.calls,
        }


def _inventories(runtime_dir: Path) -> list[frozenset[str]]:
    """The app's tools in every inventory the AppServer passed to the Agent, in order."""
    return [
        dev_tools(body.get("payload") or {})
        for body in to_agent(runtime_dir)
        if body.get("type") == INVENTORY
    ]
