"""The tool calls an exercise posts through the load Agent, and how each ended at the Agent.

`Calls.post` builds a call to one of the drill's tools and posts it with `LoadAgent.post_call`,
so the core invariants (one terminal state in the store, one terminal message at the Agent)
cover it like every call of the mix. `Calls.ended` reads the Agent's messages as they come
(from where it last stopped, so a long run costs nothing) and says how a call ended: its
result, or its error code; `Calls.wait` waits for it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import trio

from lineup import wire

from ._check import TERMINAL_TYPES
from ._workload import LoadAgent

__all__ = ["Calls", "Ended", "settle"]

_POLL_S = 0.25  # the Agent's reader keeps a record, no event: it is read again this often


@dataclass(frozen=True)
class Ended:
    result: dict[str, Any] | None  # a tool.result's
    code: str | None  # a tool.error's


@dataclass
class Calls:
    agent: LoadAgent
    client: Any  # the Agent's AgentClient
    ends: dict[str, Ended] = field(default_factory=dict)  # call id -> how it ended
    _read: int = 0

    async def post(self, call_id: str, tool: str, tool_input: dict[str, Any]) -> None:
        payload = wire.ToolCallPayload(
            call_id=call_id,
            tool=tool,
            inventory_revision=self.agent.revision or "",
            input=tool_input,
        )
        await self.agent.post_call(self.client, call_id, tool, payload)

    def ended(self, call_id: str) -> Ended | None:
        received = self.agent.received
        for _, message in received[self._read :]:
            if message.get("type") in TERMINAL_TYPES:
                payload = message.get("payload") or {}
                key = str(payload.get("call_id"))
                if message["type"] == "lineup.v1.tool.result":
                    self.ends.setdefault(key, Ended(payload.get("result") or {}, None))
                else:
                    self.ends.setdefault(key, Ended(None, str(payload.get("code"))))
        self._read = len(received)
        return self.ends.get(call_id)

    async def wait(self, call_id: str) -> Ended:
        """Until the call ended at the Agent (every call does: the core checks it)."""
        while True:
            ended = self.ended(call_id)
            if ended is not None:
                return ended
            await trio.sleep(_POLL_S)


async def settle(left: Callable[[], Awaitable[int]], bound_s: float) -> bool:
    """Until `left()` is 0 (True), polled as the drill's quiescence polls, or `bound_s` passed."""
    with trio.move_on_after(bound_s):
        while True:
            if not await left():
                return True
            await trio.sleep(_POLL_S)
    return False
