"""The drill's capability requests: their scripts, the user who answers the runtime's prompt at
the Shell, and the invariant every request must keep.

Theory of operation: an exercise that asks for a capability (`_capabilities`: the drill app
through `drill.ask`; `_surfaces`: a Surface through the bridge) registers a `Plan` under the
request id first. The request's purpose and its notification's title name that id, so when the
runtime's prompt (`shell.capability.prompt`) or the provider run (`shell.capability.run`)
reaches the Shell, `PromptUser` knows which plan it is and answers as its script says:

    allow    Allow once; the notification is then shown (`capability.done` completed)
    deny     Deny                      -> permission_denied
    cancel   the prompt dismissed      -> cancelled_by_user
    expire   nobody answers            -> operation_expired (a minute)
    hushed   asked right after a Deny or a dismissal of that app's: the runtime refuses it
             rate_limited without a prompt (if one comes all the same, a gateway that
             restarted forgot the hush, the user denies it)

An answer is sent again whenever the prompt is shown again and has not ended (the greeting of
a reconnecting Shell lists it: an answer sent to a killed hostbridge is lost), as a person
clicks again; a repeat after the first was taken is refused `prompt_not_found`, never taken
twice. The requester records every answer it got (`Plan.answers`).

`check_requests` reads, once the runtime stopped, the gateway's audit rows for each request:
exactly one final row (`gateway.capability.completed|refused|failed|cancelled`) whose outcome
is one of its script's endings, and every answer the requester got agreeing with that row. A
request has none, and that is no breach, only if its requester got no answer and it was never
asked (its call closed first). A request asked of the user before the gateway was SIGKILLed may
also end `actor_restarted` (`CapabilityAudit.ended_with_gateway`, counted in the report): its
row outlived the gateway, and the restarted one ended it once nobody could ask again under its
id (`actors/gateway/_journal.py`). While any such row is open the exercise is not settled
(`open_requests`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

import trio

from ._check import Invariant, _readonly

__all__ = [
    "CAPABILITY",
    "ENDINGS",
    "FINAL_EVENTS",
    "CapabilityAudit",
    "Plan",
    "PromptUser",
    "check_requests",
    "endings",
    "open_requests",
    "purpose_of",
]

RESTARTED: Final = "actor_restarted"  # ended by a restarted gateway: its requester had gone
CAPABILITY: Final = "notification.show"  # asked of no foreground: a load of instances is fine
PURPOSE: Final = "drill capability {request_id}"  # drillapp.ASK_PURPOSE (a test compares)
_PURPOSE: Final = re.compile(r"^drill capability (\S+)$")
ASKED_EVENT: Final = "gateway.capability.asked"
FINAL_EVENTS: Final = frozenset(
    {
        "gateway.capability.completed",
        "gateway.capability.refused",
        "gateway.capability.failed",
        "gateway.capability.cancelled",
    }
)
Script = Literal["allow", "deny", "cancel", "expire", "hushed"]
# How each script may end (the final audit row's outcome). A gateway restarted mid-way forgets
# the hush, so a hushed request may be asked, and denied.
ENDINGS: Final[dict[str, frozenset[str]]] = {
    "allow": frozenset({"completed"}),
    "deny": frozenset({"permission_denied"}),
    "cancel": frozenset({"cancelled_by_user"}),
    "expire": frozenset({"operation_expired"}),
    "hushed": frozenset({"rate_limited", "permission_denied"}),
}
ENDED_GRACE_S: Final = 5.0  # hostbridge._capabilities.ENDED_GRACE_S
_DECISION: Final = {"allow": "allow_once", "deny": "deny", "cancel": "cancel", "hushed": "deny"}


def purpose_of(request_id: str) -> str:
    return PURPOSE.format(request_id=request_id)


@dataclass
class Plan:
    request_id: str
    script: Script
    path: Literal["app", "surface"]
    asked_at: float  # trio clock
    answers: list[tuple[str, str | None]] = field(default_factory=list)  # (status, code) got
    over: bool = False  # the requester's side is done (answered, or its call ended)


@dataclass
class PromptUser:
    """Answers the prompts and runs of `plans` (shared, by request id) at the Shell."""

    user: Any  # ShellUser: `send`, `listeners`
    plans: dict[str, Plan]
    prompts: dict[str, str] = field(default_factory=dict)  # prompt or run id -> request id
    expires: dict[str, float] = field(default_factory=dict)  # prompt or run id -> wall clock
    ended: set[str] = field(default_factory=set)
    answered: dict[str, int] = field(default_factory=dict)  # decision -> answers sent
    _send: Any = None
    _receive: Any = None

    def __post_init__(self) -> None:
        self._send, self._receive = trio.open_memory_channel[dict[str, Any]](1024)
        self.user.listeners.append(self.take)

    def take(self, frame: dict[str, Any]) -> None:
        kind = frame.get("type")
        if kind == "shell.capability.prompt":
            view = frame.get("prompt") or {}
            found = _PURPOSE.match(str(view.get("purpose", "")))
            key = str(view.get("prompt_id"))
        elif kind == "shell.capability.run":
            view = frame.get("run") or {}
            found = re.match(r"^(\S+)$", str((view.get("input") or {}).get("title", "")))
            key = str(view.get("run_id"))
        elif kind == "shell.capability.ended":
            self.ended.add(str(frame.get("id")))
            return
        else:
            return
        if found is None or found.group(1) not in self.plans or key in self.ended:
            return
        self.prompts[key] = found.group(1)
        self.expires[key] = float(view.get("expires_at") or 0.0)
        try:
            self._send.send_nowait({"kind": kind, "key": key})
        except trio.WouldBlock:
            pass  # shown again at the next greeting

    def waiting(self) -> int:
        """Prompts and runs of the plans the Shell shows that have not ended. One whose end
        the Shell never heard (the hostbridge was down then) is over once past its expiry:
        the gateway ends every prompt by then."""
        now = time.time()
        return sum(
            1
            for key in self.prompts
            if key not in self.ended and now < self.expires[key] + ENDED_GRACE_S
        )

    async def run(self) -> None:
        """Answer what comes, as each plan says (until cancelled)."""
        async for item in self._receive:
            await self._answer(item)

    async def answer_shown(self) -> None:
        """Answer what has come and is not answered yet, without waiting for more: the drill
        calls it as it waits for quiet, once the load (and `run`) is over."""
        while True:
            try:
                item = self._receive.receive_nowait()
            except trio.WouldBlock:
                return
            await self._answer(item)

    async def _answer(self, item: dict[str, Any]) -> None:
        key = item["key"]
        plan = self.plans[self.prompts[key]]
        if key in self.ended:
            return
        if item["kind"] == "shell.capability.run":
            frame = {"type": "capability.done", "run_id": key, "status": "completed"}
            decision = "done"
        elif plan.script == "expire":
            return
        else:
            decision = _DECISION[plan.script]
            frame = {"type": "capability.answer", "prompt_id": key, "decision": decision}
        if await self.user.send(frame):
            self.answered[decision] = self.answered.get(decision, 0) + 1


@dataclass(frozen=True)
class CapabilityAudit:
    """The gateway's audit rows of capability requests: the final ones by request id (event,
    outcome), when each was last asked of the user, and when the gateway was SIGKILLed (the
    supervisor's rows). Times are the audit's own (wall clock)."""

    finals: dict[str, list[tuple[str, str]]]
    asked: dict[str, float] = field(default_factory=dict)
    gateway_killed: tuple[float, ...] = ()

    @classmethod
    def read(cls, store_db: Path) -> CapabilityAudit:
        finals: dict[str, list[tuple[str, str]]] = {}
        asked: dict[str, float] = {}
        marks = ", ".join("?" * len(FINAL_EVENTS))
        with _readonly(store_db) as db:
            for event, subject, code in db.execute(
                f"SELECT event, subject_id, code FROM audit WHERE event IN ({marks}) ORDER BY id",
                sorted(FINAL_EVENTS),
            ):
                finals.setdefault(str(subject), []).append((str(event), str(code)))
            for subject, at in db.execute(
                "SELECT subject_id, max(at) FROM audit WHERE event = ? GROUP BY subject_id",
                (ASKED_EVENT,),
            ):
                asked[str(subject)] = float(at)
            killed = tuple(
                float(at)
                for (at,) in db.execute(
                    "SELECT at FROM audit WHERE event = 'supervisor.child_killed'"
                    " AND peer = 'gateway' ORDER BY at"
                )
            )
        return cls(finals, asked, killed)

    def killed_while_asked(self, plan: Plan) -> bool:
        """The gateway was SIGKILLed after the request was asked of the user."""
        at = self.asked.get(plan.request_id)
        return at is not None and any(killed > at for killed in self.gateway_killed)

    def ended_with_gateway(self, plan: Plan) -> bool:
        """Ended `actor_restarted` by a restarted gateway (see `check_requests`)."""
        rows = self.finals.get(plan.request_id, [])
        return [outcome for _, outcome in rows] == [RESTARTED]


def open_requests(store_db: Path) -> int:
    """The capability requests still open in the store: a killed gateway's, not ended yet."""
    with _readonly(store_db) as db:
        ((count,),) = db.execute(
            "SELECT count(*) FROM capability_requests WHERE state = 'open'"
        ).fetchall()
    assert isinstance(count, int)
    return count


def _agrees(answer: tuple[str, str | None], outcome: str) -> bool:
    status, code = answer
    return status == "completed" and code is None if outcome == "completed" else code == outcome


def check_requests(plans: Iterable[Plan], audit: CapabilityAudit) -> Invariant:
    """One final row each, scripted, agreeing with every answer. A request never asked of the
    gateway whose requester got no answer (its call closed first) has none, and that is no
    breach; one asked of the user before the gateway was SIGKILLed may end `actor_restarted`
    (its kept row ended by the restarted gateway: `actors/gateway/_journal.py`)."""
    rule = Invariant(
        "capability_requests_end_once",
        "every capability request the drill made has exactly one final audit row (none only "
        "if its requester got no answer and it was never asked), its outcome one its script "
        "allows (allowed: completed, denied: permission_denied, dismissed: cancelled_by_user, "
        "unanswered: operation_expired, hushed: rate_limited; actor_restarted if the gateway "
        "was killed while it was asked); every answer the requester got agrees with it",
    )
    for plan in plans:
        rows = audit.finals.get(plan.request_id, [])
        if not rows and not plan.answers and plan.request_id not in audit.asked:
            continue  # never asked: its call ended before the app asked
        if len(rows) != 1:
            rule.breach(f"{plan.request_id}: {len(rows)} final audit rows")
            continue
        ((_, outcome),) = rows
        allowed = ENDINGS[plan.script]
        if audit.killed_while_asked(plan):
            allowed = allowed | {RESTARTED}
        if outcome not in allowed:
            rule.breach(f"{plan.request_id}: scripted {plan.script}, ended {outcome}")
        for answer in plan.answers:
            if not _agrees(answer, outcome):
                rule.breach(f"{plan.request_id}: got {answer[0]}/{answer[1]}, audited {outcome}")
                break
    return rule


def endings(plans: Iterable[Plan], audit: CapabilityAudit) -> dict[str, dict[str, int]]:
    """How the plans ended, by script: the outcome of their (last) final audit row, `none`."""
    ended: dict[str, dict[str, int]] = {}
    for plan in plans:
        rows = audit.finals.get(plan.request_id) or [("", "none")]
        by_outcome = ended.setdefault(plan.script, {})
        by_outcome[rows[-1][1]] = by_outcome.get(rows[-1][1], 0) + 1
    return {script: dict(sorted(o.items())) for script, o in sorted(ended.items())}
