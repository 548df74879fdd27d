"""A demo Remote Agent: greets each conversation once and echoes what the user writes.

It is the smallest agent that exercises the whole chat path: Markdown out (a greeting with
**bold**, a list and a link), user text in, one answer per user message. Both are safe to
replay: the greeting's Idempotency-Key is `greeting:<conversation_id>` and each answer's is
`reply:<message_id>`, so a restart never greets twice and a replayed sync never answers twice.
"""

from __future__ import annotations

import logging
from typing import Any, Final

import trio

from lineup.actors.kernel.actor import Actor
from lineup.actors.kernel.identity import ActorKind
from lineup.ops.devserver import DEFAULT_AGENT_ID, DEFAULT_AGENT_SECRET
from lineup.wire import TEXT

from ._client import AgentClient

__all__ = ["DEFAULT_APPSERVER_URL", "GREETING", "SYNC_TIMEOUT_MS", "DemoAgent", "DemoAgentActor"]

log = logging.getLogger("lineup.agent.demo")

DEFAULT_APPSERVER_URL: Final = "http://127.0.0.1:8787"
SYNC_TIMEOUT_MS: Final = 25_000  # one long poll; the server caps it at 30 s
MAX_ECHO_CHARS: Final = 2_000

GREETING: Final = (
    "**Welcome to LineUp!** I am the demo agent.\n"
    "\n"
    "- Write me anything and I will echo it back.\n"
    "- MiniApps will show up here as tools are advertised.\n"
    "\n"
    "Markdown works both ways: see the [CommonMark help](https://commonmark.org/help/)."
)


def echo(markdown: str) -> str:
    """The demo's answer to one user message: the text quoted back, shortened if long."""
    text = markdown if len(markdown) <= MAX_ECHO_CHARS else markdown[:MAX_ECHO_CHARS] + "…"
    quoted = "\n".join(f"> {line}" if line else ">" for line in text.splitlines() or [""])
    return f"You said:\n\n{quoted}"


class DemoAgent:
    """Logs in, greets every conversation it serves once, then answers each user text.

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

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with AgentClient(self.appserver_url) as client:
            conversations = await client.login(self.agent_id, self._secret)
            for conversation_id in conversations:
                await client.say(conversation_id, GREETING, f"greeting:{conversation_id}")
            task_status.started()
            # The cursor lives in memory only: after a restart the agent syncs from the start
            # again, and the `reply:<message_id>` keys turn every repeated answer into a no-op.
            cursor = ""
            while True:
                messages, cursor = await client.sync(cursor, self.sync_timeout_ms)
                for message in messages:
                    await self._answer(client, message)

    async def _answer(self, client: AgentClient, message: dict[str, Any]) -> None:
        if message.get("type") != TEXT:
            return
        sender = message.get("sender")
        if not isinstance(sender, dict) or sender.get("kind") != "user":
            return
        payload = message.get("payload")
        markdown = payload.get("markdown") if isinstance(payload, dict) else None
        message_id, conversation_id = message.get("id"), message.get("conversation_id")
        if not (
            isinstance(markdown, str)
            and isinstance(message_id, str)
            and isinstance(conversation_id, str)
        ):
            return
        await client.say(conversation_id, echo(markdown), f"reply:{message_id}")
        self.answered += 1
        log.info("demo.answered conversation_id=%s message_id=%s", conversation_id, message_id)


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
