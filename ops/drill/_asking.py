"""The drill's standard interactions: the Agent asks, a scripted user answers at the Shell.

Theory of operation: `Asker.drive` asks one question every `1/rate` seconds, of a seeded kind
(notice, choice, confirm, input), a third of them in the sub-session of a real instance (open,
or already closed: a closed one is history, still valid), and a few naming a sub-session that
does not exist (the runtime must refuse those `app_session_invalid` and create nothing). Each
question gets a seeded `Plan` that both sides read by call id:

    answer       the user answers once (after a short think)
    double       the user answers twice, two different answers back to back: one wins
    cancel       the user cancels (choice and input)
    dismiss      the Agent withdraws it; nobody answers
    race         the Agent withdraws it while the user answers: either may win
    expire       the shortest expiry (1 min), and nobody answers
    expire_race  the shortest expiry, and the user answers right at the deadline

Every run opens with one question of each script (`OPENING`), the two expiring ones first, so
that even a drill shorter than the runtime's shortest expiry (1 min) sees every ending: those
two expire (or race their expiry) about a minute after the load began, and the drill's
quiescence waits for them (`Asker.expiries_due`). After the opening the scripts are drawn, an
expiring one only while its expiry still falls within the load.

`Answerer` is the user's side: it reads the `shell.interactions` frames and, for each open
interaction, answers per its plan through the real socket, again after a reconnect until the
interaction is no longer open (an answer sent to a killed hostbridge is lost). An interaction
the drill did not ask (a MiniApp's own) is answered at once, so nothing waits on it.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol

import trio

from lineup import wire
from lineup.facts.interactions import WAITING

from ._check import STALE

if TYPE_CHECKING:
    from ._workload import LoadAgent

__all__ = [
    "EXPIRY_MS",
    "KINDS",
    "OPENING",
    "SCRIPTS",
    "Answerer",
    "Asker",
    "Plan",
    "answer_for",
    "request_for",
]

KINDS: Final = ("notice", "choice", "confirm", "input")
EXPIRY_MS: Final = 60_000  # the shortest expiry the runtime accepts
EXPIRY_SLACK_S: Final = 15.0  # a drawn expiring question expires this long before the load ends
BOGUS_SESSION: Final = "lu:app_session:drill-no-such-instance"
_THINK_S: Final = 2.0
_RETRY_S: Final = 3.0  # an answer not reflected by then is sent again (same answer)
_STALE_WAIT_S: Final = 10.0  # for a refusal after the post (none by then: it was taken)


class ShellSocket(Protocol):
    """What the answerer needs of the user's Shell connection (`ShellUser` is one)."""

    interactions: dict[str, dict[str, Any]]  # id -> the newest view the Shell got

    async def changed(self) -> None: ...  # until the next frame, or the socket drops

    async def send(self, frame: dict[str, Any]) -> bool: ...  # False: not connected


Script = Literal["answer", "double", "cancel", "dismiss", "race", "expire", "expire_race"]
SCRIPTS: Final[tuple[Script, ...]] = (
    "answer",
    "double",
    "cancel",
    "dismiss",
    "race",
    "expire",
    "expire_race",
)
# The first questions of every run, in this order: each script once, the expiring ones first
# (they take a minute to end), none of them a notice (a notice ends as soon as it is shown)
# nor naming a bogus sub-session (refused: it would end no way the script says).
OPENING: Final[tuple[Script, ...]] = (
    "expire",
    "expire_race",
    "answer",
    "double",
    "cancel",
    "dismiss",
    "race",
)
EXPIRING: Final = frozenset({"expire", "expire_race"})


@dataclass
class Plan:
    call_id: str
    kind: str
    script: Script
    asked_at: float  # trio.current_time() when posted
    app_session_id: str | None = None
    bogus: bool = False  # names no real sub-session: the runtime must refuse it
    answers: list[dict[str, Any]] = field(default_factory=list)  # what the user sent


def request_for(kind: str, n: int) -> dict[str, Any]:
    """The tool input of a drill question of `kind` (the contract's request shapes)."""
    if kind == "notice":
        return {
            "title": f"Drill notice {n}",
            "message": "Nothing to do.",
            "acknowledge_label": "OK",
        }
    if kind == "choice":
        mode = ("single-choice", "multi-choice", "button")[n % 3]
        actions = [{"id": f"a{i}", "label": f"Action {i}"} for i in range(4)]
        return {"title": f"Drill choice {n}", "prompt": "Pick.", "mode": mode, "actions": actions}
    if kind == "confirm":
        return {"title": f"Drill confirm {n}", "prompt": "Sure?"}
    return {
        "title": f"Drill input {n}",
        "prompt": "Fill in.",
        "fields": [
            {"id": "name", "label": "Name", "type": "text", "required": True, "max_length": 40},
            {"id": "count", "label": "Count", "type": "number", "minimum": 0, "maximum": 10},
            {"id": "note", "label": "Note", "type": "textarea"},
        ],
    }


def answer_for(view: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """A valid answer, as the user's client sends it, to the interaction the Shell shows."""
    request = view.get("request") or {}
    kind = view.get("kind")
    if kind == "notice":
        return {"acknowledged": True}
    if kind == "confirm":
        return {"approved": rng.random() < 0.5}
    if kind == "choice":
        ids = [str(a["id"]) for a in request.get("actions") or []]
        if request.get("mode") == "multi-choice":
            return {"action_ids": rng.sample(ids, rng.randrange(1, len(ids) + 1))}
        return {"action_ids": [rng.choice(ids)]}
    values: dict[str, Any] = {}
    for spec in request.get("fields") or []:
        if not spec.get("required") and rng.random() < 0.5:
            continue
        if spec.get("type") == "number":
            low, high = spec.get("minimum", 0), spec.get("maximum", 100)
            values[spec["id"]] = rng.randint(int(low), int(high))
        else:
            text = f"drill {rng.randrange(1000)}"
            values[spec["id"]] = text[: int(spec.get("max_length") or len(text))]
    return {"values": values}


@dataclass
class Asker:
    """The Agent's questions: posted through the real AppServer like every drill operation."""

    agent: LoadAgent
    seed: int
    plans: dict[str, Plan] = field(default_factory=dict)  # call id -> its plan
    dismissed: list[str] = field(default_factory=list)
    starved: dict[str, Any] = field(default_factory=dict)  # what `ask_the_starved` found
    _n: int = 0

    async def drive(self, seconds: float, rate: float, client: Any) -> None:
        rng = random.Random(self.seed + 2)
        deadline = trio.current_time() + seconds
        await self.agent.inventory_known()
        tick = trio.current_time()
        async with trio.open_nursery() as nursery:
            while trio.current_time() < deadline:
                nursery.start_soon(self._ask, client, rng, deadline - trio.current_time())
                tick += 1 / rate
                await trio.sleep_until(tick)

    def expiries_due(self) -> float:
        """When (trio's clock) the last question asked with the shortest expiry is due to
        expire, as the drill reckons from its post; 0.0 if none was."""
        due = [p.asked_at + EXPIRY_MS / 1000 for p in self.plans.values() if p.script in EXPIRING]
        return max(due, default=0.0)

    def _draw(self, rng: random.Random, n: int, left: float) -> tuple[str, Script]:
        """The kind and the script of question `n`, asked with `left` seconds of load to go."""
        if n < len(OPENING):
            script = OPENING[n]
            kinds = ("choice", "input") if script == "cancel" else KINDS[1:]
            return kinds[rng.randrange(len(kinds))], script
        kind = KINDS[rng.randrange(len(KINDS))]
        scripts: list[Script] = ["answer", "answer", "double", "dismiss", "race"]
        if kind in ("choice", "input"):
            scripts.append("cancel")
        if left > EXPIRY_MS / 1000 + EXPIRY_SLACK_S and kind != "notice":
            scripts += ["expire", "expire_race"]
        return kind, rng.choice(scripts)

    async def ask_the_starved(
        self,
        client: Any,
        seconds: float,
        newest: Callable[[], Awaitable[str | None]],
        taken: Callable[[list[str]], Awaitable[set[str]]],
    ) -> bool:
        """Once the load is quiet: each script (but the expiring ones) none of whose questions
        the runtime took (`taken`: of these call ids, those the store holds other than refused
        stale) is asked once more, in the conversation itself, within `seconds`, once the
        Agent knows the revision the runtime last sent it (`newest`, read from the store).
        True if any was. Under the link's faults, with the exercises changing the inventory
        every few seconds, the Agent can stay behind it for a whole short load, and a script
        be refused stale every time. Asked during the load's backlog (under load, a minute of
        it), a question would wait behind it and be refused stale again; once all is quiet
        nothing changes the inventory, the Agent has heard every revision, and the question is
        taken, so every ending the scripts plan is seen (the long drill sees each many times)."""
        rng = random.Random(self.seed + 5)
        starved = self._starved(await taken(list(self.plans)))
        self.starved = {"scripts": list(starved), "agent_caught_up": None}
        if not starved:
            return False
        began = trio.current_time()
        with trio.move_on_after(seconds):
            while (revision := await newest()) not in (None, self.agent.revision):
                await self.agent.news()
        self.starved["agent_caught_up"] = self.agent.revision == revision
        self.starved["caught_up_after_s"] = round(trio.current_time() - began, 1)
        async with trio.open_nursery() as nursery:
            for script in starved:
                kinds = ("choice", "input") if script == "cancel" else KINDS[1:]
                drawn = (kinds[rng.randrange(len(kinds))], script)
                nursery.start_soon(self._ask, client, rng, seconds, drawn)
        return True

    def _starved(self, taken: set[str]) -> list[Script]:
        """The scripts none of whose questions (of a kind that shows its script, in the
        conversation or a real sub-session) is among the calls the runtime `taken`."""
        took: dict[Script, bool] = {}  # script -> one of its questions was taken
        for plan in self.plans.values():
            if plan.kind == "notice" or plan.bogus or plan.script in EXPIRING:
                continue
            took[plan.script] = took.get(plan.script, False) or plan.call_id in taken
        return [script for script, was in took.items() if not was]

    async def _ask(
        self,
        client: Any,
        rng: random.Random,
        left: float,
        drawn: tuple[str, Script] | None = None,
    ) -> None:
        """Ask one question, its kind and script drawn (or `drawn`: then in the conversation
        itself), again while it is refused stale, within `left` seconds."""
        n, self._n = self._n, self._n + 1
        kind, script = drawn or self._draw(rng, n, left)
        tool_input = request_for(kind, n)
        if kind != "notice":
            short = script in EXPIRING
            tool_input["expires_in_ms"] = EXPIRY_MS if short else 15 * 60_000
        draw = rng.random()
        sessions = sorted(self.agent.sessions)
        session: str | None = None
        if drawn is None and draw < 0.05 and n >= len(OPENING):
            session = BOGUS_SESSION
        elif drawn is None and draw < 0.35 and sessions:
            session = sessions[rng.randrange(len(sessions))]
        extra = {}
        if session is not None:
            extra["app_session_context"] = {"app_session_id": session}
        think = rng.uniform(0.2, _THINK_S) if script == "dismiss" else _THINK_S / 2
        deadline = trio.current_time() + left  # no waiting for a refusal past the load's end
        # Asked again, as a new question, when refused for an inventory revision that changed
        # while it was posted (an install did): as an Agent does, so each script still happens.
        # As often as the load's time allows: under faults, with the inventory changing every
        # few seconds, a question can wait behind the load's backlog long enough to be refused
        # stale many times over.
        for attempt in itertools.count():
            call_id = f"call-drill-{self.seed}-ask{n}" + (f"-{attempt}" if attempt else "")
            bogus = session == BOGUS_SESSION
            plan = Plan(call_id, kind, script, trio.current_time(), session, bogus)
            payload = wire.ToolCallPayload(
                call_id=call_id,
                tool=f"interaction.{kind}",
                inventory_revision=self.agent.revision or "",
                input=tool_input,
                **extra,
            )
            self.plans[call_id] = plan
            revision = payload.inventory_revision
            await self.agent.post_call(client, call_id, f"interaction.{kind}", payload)
            if script in ("dismiss", "race"):
                await trio.sleep(think)
                await self._dismiss(client, call_id, f"{n}-{attempt}" if attempt else str(n))
            final: dict[str, Any] = {}
            # A refusal comes at once, an answer later; neither is waited for past the load.
            with trio.move_on_at(min(deadline, trio.current_time() + _STALE_WAIT_S)):
                final = await self.agent.final(call_id)
            if (final.get("payload") or {}).get("code") != STALE:
                return
            with trio.move_on_at(min(deadline, trio.current_time() + _STALE_WAIT_S)):
                await self.agent.revision_other_than(revision)  # asked again under it
            if trio.current_time() >= deadline:
                return

    async def _dismiss(self, client: Any, call_id: str, n: str) -> None:
        message_id = f"msg-drill-{self.seed}-dismiss{n}"
        envelope = wire.dump(
            wire.envelope(
                wire.DISMISS,
                wire.DismissPayload(control_id=f"dismiss-{n}", call_id=call_id),
                conversation_id=self.agent.conversation,
                sender_kind="agent",
                sender_id=self.agent.agent_id,
                message_id=message_id,
            )
        )
        self.dismissed.append(call_id)
        await self.agent.post_until_taken(client, envelope, message_id)


@dataclass
class Answerer:
    """The user's side of the interactions, through `ShellUser`'s socket."""

    user: ShellSocket
    plans: dict[str, Plan]
    seed: int
    answered: int = 0
    _busy: set[str] = field(default_factory=set)  # interaction ids being answered

    async def run(self) -> None:
        rng = random.Random(self.seed + 3)
        async with trio.open_nursery() as nursery:
            while True:
                for interaction_id, view in list(self.user.interactions.items()):
                    if view.get("state") in WAITING and interaction_id not in self._busy:
                        plan = self.plans.get(str(view.get("call_id")))
                        if plan is None or plan.script not in ("dismiss", "expire"):
                            self._busy.add(interaction_id)
                            seed = rng.randrange(2**32)
                            nursery.start_soon(self._answer, interaction_id, plan, seed)
                await self.user.changed()

    def _open(self, interaction_id: str) -> bool:
        return self.user.interactions.get(interaction_id, {}).get("state") in WAITING

    async def _answer(self, interaction_id: str, plan: Plan | None, seed: int) -> None:
        rng = random.Random(seed)
        view = self.user.interactions[interaction_id]
        if plan is not None and plan.script == "expire_race":
            await trio.sleep_until(plan.asked_at + EXPIRY_MS / 1000 + rng.uniform(-0.3, 0.3))
        elif plan is not None and plan.script != "race":
            await trio.sleep(rng.uniform(0, _THINK_S))
        elif plan is not None:
            # With the dismiss, which has the AppServer's round trip to make: either may win.
            await trio.sleep(_THINK_S / 2 + rng.uniform(0, 0.3))
        if plan is not None and plan.script == "cancel":
            answers = [{"cancelled": True}]
        elif plan is not None and plan.script == "double":
            answers = [answer_for(view, rng), answer_for(view, rng)]
        else:
            answers = [answer_for(view, rng)]
        # Sent again (the same answers) until the Shell shows it is no longer open: a frame
        # sent to a killed hostbridge is lost. A repeat is the double click the runtime must
        # answer with the same receipt.
        while self._open(interaction_id):
            for answer in answers:
                sent = await self.user.send(
                    {
                        "type": "interaction.answer",
                        "interaction_id": interaction_id,
                        "answer": answer,
                    }
                )
                if sent and plan is not None:
                    plan.answers.append(answer)
            with trio.move_on_after(_RETRY_S):
                while self._open(interaction_id):
                    await self.user.changed()
        self.answered += 1
