"""The drill's MCP app: an MCP server run as a LineUp app in the drilled tree, called by the
Agent while the faults hit it and its server.

Theory of operation: `prepare` adds the drill's own Python MCP server (`drillmcp/server.py`,
built with the official SDK) to `lineup run` with `--dev-mcp`: the runtime lists its tools in
the sandbox and runs it as the app `drillmcp`, whose process is LineUp's MCP client (the
adapter, `miniapp:drillmcp`) with the server as its child. During the load the Agent calls
`drillmcp.echo` (answered at once) and `drillmcp.nap` (answered after a short sleep, so calls
are in flight when a fault fires), posted by two slots one after another. The injector kills
and pauses the adapter (`miniapp:drillmcp`) and the server (`miniapp:drillmcp/server`, found
as the adapter's child, `_faults`): a dead server ends its open calls `mcp_server_exited` and
the supervisor restarts the app; a dead adapter's calls are taken again by the next one.

The invariant, `mcp_app_calls_answered`, from the AppServer's record once the runtime stopped:
each call the Agent made of the app has exactly one terminal message, and it is either a result
carrying the number asked for, or an error with a stable code — never a wrong number. (The core
invariants cover the same calls as any other: one terminal, a final state in the store.)
"""

from __future__ import annotations

import random
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import trio

from lineup import wire

from ._check import Invariant, to_agent
from ._exercise import Setup, Stage

__all__ = ["SCOPE", "SERVER_DIR", "McpApps", "check_mcp_app_calls"]

SCOPE: Final = "drillmcp"
SERVER_DIR: Final = Path(__file__).resolve().parent / "drillmcp"
IN_FLIGHT: Final = 2  # calls posted at once, each slot one after another
_GAP_S: Final = (0.1, 0.8)  # between two posts of one slot
_NAP_MS: Final = (50, 600)
_TERMINALS: Final = ("lineup.v1.tool.result", "lineup.v1.tool.error")


def check_mcp_app_calls(
    asked: dict[str, int], terminals: dict[str, list[dict[str, Any]]]
) -> list[Invariant]:
    """`asked`: each call's id and the number it asked for; `terminals`: the terminal messages
    the AppServer passed to the Agent, by call id."""
    rule = Invariant(
        "mcp_app_calls_answered",
        "every call of the MCP app got exactly one terminal message: its own number, or an "
        "error with a stable code",
    )
    for call_id, n in sorted(asked.items()):
        ends = terminals.get(call_id, [])
        if len(ends) != 1:
            rule.breach(f"{call_id}: {len(ends)} terminal messages")
            continue
        problem = _wrong(ends[0], n)
        if problem is not None:
            rule.breach(f"{call_id}: {problem}")
    return [rule]


def _wrong(message: dict[str, Any], n: int) -> str | None:
    payload = message.get("payload") or {}
    if message.get("type") == "lineup.v1.tool.error":
        code = payload.get("code")
        return None if isinstance(code, str) and code else "an error without a code"
    got = (payload.get("result") or {}).get("n")
    return None if got == n else f"answered {got}, asked {n}"


def outcome(message: dict[str, Any]) -> str:
    if message.get("type") == "lineup.v1.tool.error":
        return f"error:{(message.get('payload') or {}).get('code')}"
    return "ok"


@dataclass
class McpApps:
    """The exercise (see the module's docstring)."""

    seed: int
    name: str = "mcp_apps"
    asked: dict[str, int] = field(default_factory=dict)
    outcomes: Counter[str] = field(default_factory=Counter)
    _count: int = 0

    def prepare(self, setup: Setup) -> list[str]:
        # Its command is the rest of the line (`-- COMMAND…`): the runner puts it last.
        return ["--dev-mcp", str(SERVER_DIR), "--", sys.executable, "server.py"]

    async def drive(self, stage: Stage, seconds: float) -> None:
        await stage.agent.inventory_known()
        deadline = trio.current_time() + seconds
        async with trio.open_nursery() as nursery:
            for slot in range(IN_FLIGHT):
                nursery.start_soon(self._slot, stage, deadline, random.Random(self.seed + slot))

    async def _slot(self, stage: Stage, deadline: float, rng: random.Random) -> None:
        while trio.current_time() < deadline:
            await trio.sleep(rng.uniform(*_GAP_S))
            self._count += 1
            call_id = f"call-drill-{self.seed}-mcp{self._count}"
            n = rng.randrange(10**9)
            tool, args = (
                ("echo", {"n": n})
                if rng.random() < 0.5
                else ("nap", {"n": n, "ms": rng.randrange(*_NAP_MS)})
            )
            payload = wire.ToolCallPayload(
                call_id=call_id,
                tool=f"{SCOPE}.{tool}",
                inventory_revision=stage.agent.revision or "",
                input=args,
            )
            self.asked[call_id] = n
            await stage.agent.post_call(stage.client, call_id, f"{SCOPE}.{tool}", payload)

    async def unsettled(self, stage: Stage) -> int:
        return len(self.asked.keys() & stage.agent.unanswered)

    def check(self, setup: Setup) -> list[Invariant]:
        terminals = _terminals(setup.runtime_dir, set(self.asked))
        self.outcomes = Counter(outcome(ends[0]) for ends in terminals.values())
        return check_mcp_app_calls(self.asked, terminals)

    def report(self) -> dict[str, Any]:
        return {"tool_calls": len(self.asked), "by_outcome": dict(self.outcomes)}


def _terminals(runtime_dir: Path, call_ids: set[str]) -> dict[str, list[dict[str, Any]]]:
    """The terminal messages of `call_ids` the AppServer passed to the Agent."""
    found: dict[str, list[dict[str, Any]]] = {}
    for body in to_agent(runtime_dir):
        call_id = (body.get("payload") or {}).get("call_id")
        if body.get("type") in _TERMINALS and call_id in call_ids:
            found.setdefault(call_id, []).append(body)
    return found
