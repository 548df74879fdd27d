"""A demo Remote Agent: greets each conversation once, tours the standard interactions, and
echoes what the user writes; answers the chat commands `/tools`, `/call TOOL {json}` and
`/play draw-and-guess` (`_commands.py`, `_play.py`).

It is the smallest agent that exercises the whole chat path: Markdown out (a greeting with
**bold**, a list and a link), user text in, one answer per user message; and, once the
runtime's inventory advertises the standard interactions, the tour of `_tour.py`: a menu card
("What would you like to try?"), a question of each kind, the Task Dashboard with a question in
its sub-session. Everything is safe to replay: the greeting's Idempotency-Key is
`greeting:<conversation_id>`, and every other move's key derives from the message it answers
(`reply:<message_id>`, a call id from the call it follows), so a restart never greets twice and
a replayed sync never answers or asks twice. Each message goes to the commands first (they
keep the inventory, answer a command and follow the calls they made) and then, unless they
took it, to the tour. A `Tick` of `/play` runs `delay_s` later in the Agent's own nursery.
"""

from __future__ import annotations

import logging
from typing import Any, Final

import trio

from lineup.actors.kernel.actor import Actor
from lineup.actors.kernel.identity import ActorKind
from lineup.ops.devserver import DEFAULT_AGENT_ID, DEFAULT_AGENT_SECRET

from ._client import AgentClient
from ._commands import Commands
from ._play import POLL_S, Game, Step, Tick
from ._tour import MAX_ECHO_CHARS, MENU_WORD, Dismiss, Say, Tour, echo

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
    "- Write `/tools` for the tools I can call, and `/call TOOL {json}` to have me call one "
    "(yours too): you see its receipts and its result here.\n"
    "- Write `/play draw-and-guess` to draw while I guess (install the game from the App "
    "Registry first).\n"
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
        poll_s: float = POLL_S,
    ) -> None:
        self.appserver_url = appserver_url
        self.agent_id = agent_id
        self._secret = agent_secret
        self.sync_timeout_ms = sync_timeout_ms
        self.answered = 0  # user messages answered (or found already answered) in this run
        self.asked = 0  # tool calls posted (or found already posted) in this run
        self.tour = Tour()
        self.commands = Commands(game=Game(poll_s=poll_s))

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with AgentClient(self.appserver_url) as client, trio.open_nursery() as later:
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
                    moves = self.commands.take(message)
                    for move in self.tour.take(message) if moves is None else moves:
                        await self._make(client, move, message, later)

    async def _make(
        self, client: AgentClient, move: Step, message: dict[str, Any], later: trio.Nursery
    ) -> None:
        if isinstance(move, Tick):
            later.start_soon(self._tick, client, move, later)
            return
        if isinstance(move, Say):
            await client.say(
                move.conversation_id,
                move.markdown,
                move.key,
                app_session_context=move.app_session_id,
            )
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

    async def _tick(self, client: AgentClient, tick: Tick, later: trio.Nursery) -> None:
        await trio.sleep(tick.delay_s)  # a game's pace, not a synchronisation
        for move in self.commands.tick(tick):
            await self._make(client, move, {}, later)


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
