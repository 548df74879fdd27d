"""The `capabilities` exercise: the drill app asks for a capability, the user answers the
runtime's prompt, while the faults hit (`_prompts` holds the scripts and the invariant).

Theory of operation: the Agent calls `drill.ask` (an operation of the drill app), which asks
the gateway for `notification.show` under a request id derived from the call (so a re-run
after a crash of the app is the same request). Every run opens with `OPENING`: two requests
left to expire, asked first because the prompt's expiry is a minute (a run shorter than that
still sees them expire, and the exercise waits for them); then, every few seconds while the
load lasts (and at most `IN_FLIGHT` at once, within the runtime's four waiting prompts per
app), one the user allows. Denials and dismissals are the Surface's (`_surfaces`): a Deny
hushes the asking app's requests of that capability for 30 s and answers its other waiting
prompts, which would end these others' way.

A call the router refuses before the app runs it (`app_instance_not_found`: the drill app has
no live instance yet; a stale inventory) asked nothing, which the check requires too, and is
asked again under a new call. A plan is over when its call ended at the Agent (its result is
the requester's answer; an error such as `app_closed`, a user closing the instance, is no
answer, and the gateway still ends the request its way). After the load the exercise goes on
answering until every plan is over and no prompt of its own is waiting, bounded by `SETTLE_S`.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Final

import trio

from ._calls import Calls, settle
from ._check import STALE, Invariant
from ._exercise import Setup, Stage
from ._prompts import CapabilityAudit, Plan, PromptUser, Script, check_requests, endings
from .drillapp import ask_request_id

__all__ = ["CapabilitiesExercise"]

OPENING: Final[tuple[Script, ...]] = ("expire", "expire")
IN_FLIGHT: Final = 2  # allowed requests at once (two expiring ones wait meanwhile)
EVERY_S: Final = (1.5, 4.0)  # between two allowed requests
TAIL_S: Final = 8.0  # no new request this close to the load's end
SETTLE_S: Final = 240.0  # after the load, the wait for the last prompts (an expiry is 60 s)
RETRY_S: Final = 1.0  # before asking again what the router refused
# The router's refusals of a call before the app runs it: nothing was asked of the gateway.
NOT_DELIVERED: Final = frozenset({STALE, "app_instance_not_found"})


@dataclass
class CapabilitiesExercise:
    seed: int
    name: str = "capabilities"
    plans: dict[str, Plan] = field(default_factory=dict)  # request id -> its plan
    calls: dict[str, str] = field(default_factory=dict)  # call id -> request id
    refused: set[str] = field(default_factory=set)  # request ids whose call never reached the app
    endings: dict[str, dict[str, int]] = field(default_factory=dict)  # from the audit
    _user: PromptUser | None = None
    _calls: Calls | None = None

    def prepare(self, setup: Setup) -> list[str]:
        return []

    async def drive(self, stage: Stage, seconds: float) -> None:
        rng = random.Random(self.seed + 11)
        self._user = PromptUser(stage.user, self.plans)
        self._calls = Calls(stage.agent, stage.client)
        end = trio.current_time() + seconds
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._user.run)
            await stage.agent.inventory_known()
            async with trio.open_nursery() as asking:
                for script in OPENING:
                    asking.start_soon(self._ask, script, end)
                while trio.current_time() < end - TAIL_S:
                    await trio.sleep(rng.uniform(*EVERY_S))
                    if self._open("allow") < IN_FLIGHT and trio.current_time() < end - TAIL_S:
                        asking.start_soon(self._ask, "allow", end)
            await settle(lambda: self.unsettled(stage), SETTLE_S)
            nursery.cancel_scope.cancel()

    def _open(self, script: str) -> int:
        return sum(1 for p in self.plans.values() if p.script == script and not p.over)

    async def _ask(self, script: Script, end: float) -> None:
        """Ask once through `drill.ask`; again (a new call) while the router refuses the call
        before it reaches the app (the drill app has no live instance yet, or the Agent's
        inventory is stale), until the load's end."""
        assert self._calls is not None
        while True:
            n = len(self.calls)
            call_id = f"call-drill-{self.seed}-cap{n}"
            request_id = ask_request_id(call_id)
            plan = self.plans[request_id] = Plan(request_id, script, "app", trio.current_time())
            self.calls[call_id] = request_id
            await self._calls.post(call_id, "drill.ask", {"n": n})
            ended = await self._calls.wait(call_id)
            if ended.result is not None:
                plan.answers.append((str(ended.result.get("status")), ended.result.get("code")))
            plan.over = True
            if ended.code not in NOT_DELIVERED:
                return
            self.refused.add(request_id)  # the app never ran it: nothing was asked
            if trio.current_time() > end - TAIL_S:
                return
            await trio.sleep(RETRY_S)

    async def unsettled(self, stage: Stage) -> int:
        waiting = self._user.waiting() if self._user is not None else 0
        return waiting + sum(1 for p in self.plans.values() if not p.over)

    def check(self, setup: Setup) -> list[Invariant]:
        audit = CapabilityAudit.read(setup.runtime_dir / "lineup.db")
        asked = [p for p in self.plans.values() if p.request_id not in self.refused]
        rule = check_requests(asked, audit)
        self.endings = endings(asked, audit)
        for request_id in sorted(self.refused):
            if audit.finals.get(request_id):
                rule.breach(f"{request_id}: audited, yet its call never reached the app")
        return [rule]

    def report(self) -> dict[str, Any]:
        user = self._user
        return {
            "asked": len(self.plans),
            "by_script": dict(sorted(Counter(p.script for p in self.plans.values()).items())),
            "ended_by_script": self.endings,
            "answers_got": dict(
                sorted(
                    Counter(
                        f"{s}:{c}" if c else s for p in self.plans.values() for s, c in p.answers
                    ).items()
                )
            ),
            "never_reached_the_app": len(self.refused),
            "user_answers_sent": dict(sorted((user.answered if user else {}).items())),
        }
