"""The `capabilities` exercise: the drill app asks for a capability and the user denies or
dismisses the runtime's prompt, while the faults hit (`_prompts` holds the scripts and the
invariant; the Surface's requests, allowed and left to expire, are `_surfaces`').

Theory of operation: the Agent calls `drill.ask` (an operation of the drill app), which asks
the gateway for `notification.show` under a request id derived from the call (so a re-run
after a crash of the app is the same request), and answers the result. The exercise asks,
one at a time: a request the user denies, then at once one the runtime must refuse
`rate_limited` without a prompt (a Deny hushes the app's requests of that capability for 30 s),
then, once the hush is over, one the user dismisses and a hushed one again, and round again
while the load lasts. The hush is the gateway's memory: a gateway restarted meanwhile asks the
hushed one (the user denies it, a new hush from then), so the next waits from its end. These
are the drill app's and the allowed and expiring ones another app's, because a Deny or a
dismissal also answers the same app's other waiting prompts.

A call the router refuses before the app runs it (`app_instance_not_found`: the drill app has
no live instance yet; a stale inventory) asked nothing, which the check requires too, and is
asked again under a new call. A plan is over when its call ended at the Agent (its result is
the requester's answer; an error such as `app_closed`, a user closing the instance, is no
answer, and the gateway still ends the request its way). After the load the drill waits for
every plan to be over and no prompt of its own to wait (`unsettled`), answering meanwhile what
the Shell still shows.
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Final

import trio

from lineup.sdk.capabilities import PROMPT_QUIET_S

from ._calls import Calls
from ._check import STALE, Invariant
from ._exercise import Setup, Stage
from ._prompts import (
    CapabilityAudit,
    Plan,
    PromptUser,
    Script,
    check_requests,
    endings,
    open_requests,
)
from .drillapp import ask_request_id

__all__ = ["CapabilitiesExercise"]

CYCLE: Final[tuple[Script, ...]] = ("deny", "cancel")  # each followed by a hushed one
TAIL_S: Final = 8.0  # no new request this close to the load's end
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
    ended_with_gateway: int = 0  # requests a restarted gateway ended `actor_restarted`
    _user: PromptUser | None = None
    _calls: Calls | None = None

    def prepare(self, setup: Setup) -> list[str]:
        return []

    async def drive(self, stage: Stage, seconds: float) -> None:
        self._user = PromptUser(stage.user, self.plans)
        self._calls = Calls(stage.agent, stage.client)
        end = trio.current_time() + seconds
        await stage.agent.inventory_known()
        async with trio.open_nursery() as load:
            load.start_soon(self._user.run)
            for script in itertools.cycle(CYCLE):
                if trio.current_time() > end - TAIL_S:
                    break
                plan = await self._ask(script, end)
                if plan is not None and trio.current_time() < end - TAIL_S:
                    await self._ask("hushed", end)
                    # The hush runs from the last Deny or dismissal the gateway saw: the hushed
                    # one's own, if a restarted gateway (whose hush is in its memory) asked it
                    # and the user denied it. Counted from its end, it is over either way.
                    hushed_until = trio.current_time() + PROMPT_QUIET_S + 1
                    await trio.sleep_until(min(hushed_until, end))
            await trio.sleep_until(end)
            load.cancel_scope.cancel()

    async def _ask(self, script: Script, end: float) -> Plan | None:
        """Ask through a `drill.ask` call and wait for its end (until the load's end); again
        under a new call while the router refuses it before the app runs it. The plan, once
        the app asked; None if the load ended first. A post is never cancelled: the load is
        cancelled only after this returns (a call half posted would be one the Agent never
        made)."""
        assert self._calls is not None
        while trio.current_time() < end - TAIL_S:
            n = len(self.calls)
            call_id = f"call-drill-{self.seed}-cap{n}"
            request_id = ask_request_id(call_id)
            plan = self.plans[request_id] = Plan(request_id, script, "app", trio.current_time())
            self.calls[call_id] = request_id
            await self._calls.post(call_id, "drill.ask", {"n": n})
            while not plan.over and trio.current_time() < end:
                self._update()
                await trio.sleep(RETRY_S / 4)
            if request_id not in self.refused:
                return plan if plan.over else None
            await trio.sleep(RETRY_S)
        return None

    def _update(self) -> None:
        """Take the ends of the plans' calls, and which the router refused before the app ran
        them (the drill app has no live instance yet, a stale inventory)."""
        assert self._calls is not None
        for call_id, request_id in self.calls.items():
            plan = self.plans[request_id]
            ended = None if plan.over else self._calls.ended(call_id)
            if ended is None:
                continue
            if ended.result is not None:
                plan.answers.append((str(ended.result.get("status")), ended.result.get("code")))
            plan.over = True
            if ended.code in NOT_DELIVERED:
                self.refused.add(request_id)  # the app never ran it: nothing was asked

    async def unsettled(self, stage: Stage) -> int:
        if self._user is None:
            return 0
        await self._user.answer_shown()
        self._update()
        # A request a killed gateway left open is ended by the restarted one (its grace).
        kept = open_requests(stage.setup.runtime_dir / "lineup.db")
        return kept + self._user.waiting() + sum(1 for p in self.plans.values() if not p.over)

    def check(self, setup: Setup) -> list[Invariant]:
        audit = CapabilityAudit.read(setup.runtime_dir / "lineup.db")
        asked = [p for p in self.plans.values() if p.request_id not in self.refused]
        rule = check_requests(asked, audit)
        self.endings = endings(asked, audit)
        self.ended_with_gateway = sum(1 for plan in asked if audit.ended_with_gateway(plan))
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
            "ended_with_gateway": self.ended_with_gateway,
            "user_answers_sent": dict(sorted((user.answered if user else {}).items())),
        }
