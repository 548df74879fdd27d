"""A demo Remote Agent: greets each conversation once, tours the standard interactions, and
echoes what the user writes.

It is the smallest agent that exercises the whole chat path: Markdown out (a greeting with
**bold**, a list and a link), user text in, one answer per user message; and, once the
runtime's inventory advertises the standard interactions, the tour of `_tour.py`: a menu card
("What would you like to try?"), a question of each kind, the Task Dashboard with a question in
its sub-session. Everything is safe to replay: the greeting's Idempotency-Key is
`greeting:<conversation_id>`, and every other move's key derives from the message it answers
(`reply:<message_id>`, a call id from the call it follows), so a restart never greets twice and
a replayed sync never answers or asks twice.
"""

from __future__ import annotations

import logging
from typing import Any, Final

import trio

from lineup.actors.kernel.actor import Actor
from lineup.actors.kernel.identity import ActorKind
from lineup.ops.devserver import DEFAULT_AGENT_ID, DEFAULT_AGENT_SECRET

from ._client import AgentClient
from ._tour import MAX_ECHO_CHARS, MENU_WORD, Dismiss, Move, Say, Tour, echo

__all__ = [
    "DEFAULT_APPSERVER_URL",
    "GREETING",
    "MAX_ECHO_CHARS",
    "SYNC_TIMEOUT_MS",
    "DemoAgent",
    "DemoAgentActor",
    "echo",
]

log = logging.getLogger("lineup.agent.demo")

DEFAULT_APPSERVER_URL: Final = "http://127.0.0.1:8787"
SYNC_TIMEOUT_MS: Final = 25_000  # one long poll; the server caps it at 30 s

GREETING: Final = (
    "**Welcome to LineUp!** I am the demo agent.\n"
    "\n"
    "- A card will ask what you would like to try: a question of each kind, or a MiniApp.\n"
    f"- Write `{MENU_WORD}` to see that card again; anything else I echo back.\n"
    "- MiniApps will show up here as tools are advertised.\n"
    "\n"
    "Markdown works both ways: see the [CommonMark help](https://commonmark.org/help/)."
)


class DemoAgent:
    """Logs in, greets every conversation it serves once, then answers what the client sends.

    `run` reports started once logged in and greeted. It raises `AppServerError` when the
    AppServer stays unreachable beyond the client's bounded retries (a supervisor restarts it).
    """

    def __init__(
        self,
        appserver_url: str,
        agent_id: str,
        agent_secret: str,
        *,
        sync_timeout_ms: int = SYNC_TIMEOUT_MS,
    ) -> None:
        self.appserver_url = appserver_url
        self.agent_id = agent_id
        self._secret = agent_secret
        self.sync_timeout_ms = sync_timeout_ms
        self.answered = 0  # user messages answered (or found already answered) in this run
        self.asked = 0  # tool calls posted (or found already posted) in this run
        self.tour = Tour()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with AgentClient(self.appserver_url) as client:
            conversations = await client.login(self.agent_id, self._secret)
            for conversation_id in conversations:
                await client.say(conversation_id, GREETING, f"greeting:{conversation_id}")
            task_status.started()
            # The cursor lives in memory only: after a restart the agent syncs from the start
            # again, and the keys derived from each message turn every repeat into a no-op.
            cursor = ""
            while True:
                messages, cursor = await client.sync(cursor, self.sync_timeout_ms)
                for message in messages:
                    for move in self.tour.take(message):
                        await self._make(client, move, message)

    async def _make(self, client: AgentClient, move: Move, message: dict[str, Any]) -> None:
        if isinstance(move, Say):
            await client.say(move.conversation_id, move.markdown, move.key)
            if move.key.startswith("reply:"):
                self.answered += 1
                log.info(
                    "demo.answered conversation_id=%s message_id=%s",
                    move.conversation_id,
                    message.get("id"),
                )
            return
        if isinstance(move, Dismiss):
            await client.dismiss(move.conversation_id, move.key, move.call_id, move.key)
            log.info(
                "demo.dismissed conversation_id=%s call_id=%s", move.conversation_id, move.call_id
            )
            return
        await client.call_tool(
            move.conversation_id,
            move.tool,
            move.input,
            move.revision,
            call_id=move.call_id,
            app_session_context=move.app_session_id,
            instance_id=move.instance_id,
            idempotency_key=move.call_id,
        )
        self.asked += 1
        log.info(
            "demo.asked conversation_id=%s tool=%s call_id=%s",
            move.conversation_id,
            move.tool,
            move.call_id,
        )


class DemoAgentActor(Actor):
    """Runs `DemoAgent` from `ctx.config["demo_agent"]`: `appserver_url`, `agent_id`,
    `agent_secret` (defaults: the devserver's on 127.0.0.1:8787)."""

    kind = ActorKind.DEV

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        raw = self.ctx.config.get("demo_agent") or {}
        agent = DemoAgent(
            str(raw.get("appserver_url", DEFAULT_APPSERVER_URL)),
            str(raw.get("agent_id", DEFAULT_AGENT_ID)),
            str(raw.get("agent_secret", DEFAULT_AGENT_SECRET)),
        )
        await agent.run(task_status=task_status)
