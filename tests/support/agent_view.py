"""The Agent's side of an end-to-end test: what it has received, read from the AppServer."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import trio

from lineup.ops.agent import AgentClient

Message = dict[str, Any]
FINALS = ("lineup.v1.tool.result", "lineup.v1.tool.error")
POLL_MS = 1_000  # one long poll of the AppServer, well inside any wait


class AgentView:
    """Everything the Agent has been sent, in order; each wait is bounded by `wait_s`."""

    def __init__(self, client: AgentClient, *, wait_s: float = 20.0) -> None:
        self.client = client
        self.wait_s = wait_s
        self.seen: list[Message] = []
        self.cursor = ""

    async def pull(
        self, kinds: str | tuple[str, ...], match: Callable[[Message], bool] = lambda m: True
    ) -> Message:
        """The first message of (one of) `kinds` that `match`es, waiting for it if need be."""
        wanted = (kinds,) if isinstance(kinds, str) else kinds
        with trio.fail_after(self.wait_s):
            while True:
                for message in self.seen:
                    if message["type"] in wanted and match(message):
                        return message
                page, self.cursor = await self.client.sync(self.cursor, timeout_ms=POLL_MS)
                self.seen += page

    def of_call(self, call_id: str, *kinds: str) -> list[Message]:
        """The messages about `call_id` (of `kinds`, if any are named)."""
        return [
            m
            for m in self.seen
            if m["payload"].get("call_id") == call_id and (not kinds or m["type"] in kinds)
        ]

    async def inventory(self) -> str:
        """The newest inventory revision the Agent has."""
        await self.pull("lineup.v1.client.inventory")
        latest = [m for m in self.seen if m["type"] == "lineup.v1.client.inventory"][-1]
        return str(latest["payload"]["revision"])

    async def revision_with(self, method: str) -> str:
        """The first inventory revision that lists `method` (an app just installed or enabled
        reaches the Agent in an inventory published after the operation's end)."""
        inventory = await self.pull(
            "lineup.v1.client.inventory",
            lambda m: method in {t["method"] for t in m["payload"]["tools"]},
        )
        return str(inventory["payload"]["revision"])

    async def terminal(self, call_id: str) -> Message:
        return await self.pull(FINALS, lambda m: m["payload"].get("call_id") == call_id)

    async def settle(self) -> None:
        """Read everything the AppServer has now (after the runtime went quiet)."""
        with trio.fail_after(self.wait_s):
            while True:
                page, self.cursor = await self.client.sync(self.cursor, timeout_ms=300)
                if not page:
                    return
                self.seen += page
