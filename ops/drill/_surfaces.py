"""The `surfaces` exercise: Surfaces opened, written, reloaded and closed, and a Surface's own
capability requests allowed and left to expire, while the faults hit.

Theory of operation: the drill's user is a Shell, and a browser would be the Shell and the
Surface page both: so the exercise speaks, on the user's Shell socket, the `surface.request`
frames the Shell's bridge sends for a mounted Surface, and reads the `shell.view`,
`shell.apps` and `shell.surface.reply` frames (a listener on `ShellUser`).

The Agent opens pads: `drill-pad.open` (launch) to the second drill app (`drillapp/drillpad`),
which opens the instance's Surface with its number in the state, so a view names the pad it
is. At most `PADS` are open at once. Each pad is mounted (`lineup/session-data/subscribe`),
then written a few times (`replace`, with the revision it last read: `stale_revision` means a
newer one is there, read again), now and then reloaded (the Shell re-mounts it: a new bridge
session on the same instance, which subscribes again), and closed by the user. A request whose
answer does not come (the hostbridge was killed or stopped, or the Surface is being opened
again after focus restarted) is read again: its write may or may not have landed, which the
check allows (`_session_data`).

One more pad stays open for the capability requests (`_prompts`): first `EXPIRING` left to
expire (a prompt expires after a minute: a run shorter than that still sees them end, the drill
waits for them; in a longer run, more while they can end within the load), and one after
another the user allows. A request whose answer is lost is sent again under the same request
id (the gateway answers a repeat without asking again; a gateway that restarted asks again).
A Surface is a requester that stays: a request left to expire by an app whose call was closed
meanwhile is lost if the gateway is killed while it waits (`_prompts.check_requests`), one of
the Surface's is sent again and ends. Denials and dismissals are the drill app's
(`_capabilities`): a Deny also answers the same app's other waiting prompts.

After the load the exercise closes its pads; `unsettled` counts the requests still waiting,
the pads still open (and closes them again) and its prompts still shown.
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import trio

from lineup.facts.views import SURFACE_VIEW_KIND
from lineup.sdk.capabilities import DEFAULT_PROMPT_TIMEOUT_S

from ._calls import Calls
from ._check import Invariant
from ._exercise import Setup, Stage
from ._prompts import (
    CAPABILITY,
    CapabilityAudit,
    Plan,
    PromptUser,
    Script,
    check_requests,
    endings,
    open_requests,
    purpose_of,
)
from ._session_data import (
    SessionLog,
    check_no_write_after_end,
    check_session_data,
    stored_session_data,
    write_and_end_times,
)

__all__ = ["SurfacesExercise"]

PAD_SCOPE: Final = "drill-pad"
DRILL_PAD: Final = Path(__file__).resolve().parent / "drillapp" / "drillpad"  # a dev app
PADS: Final = 3  # written pads open at once (and the capability pad)
WRITES: Final = (3, 12)  # writes to one pad before the user closes it
RELOAD: Final = 0.2  # the chance of a reload before a write
WRITE_PAUSE_S: Final = (0.05, 0.4)
REQUEST_S: Final = 8.0  # a bridge request not answered by then is taken as lost
CAPABILITY_S: Final = 90.0  # a capability request waits on the prompt (no expiry here)
RESEND_S: Final = 10.0  # after the load, a capability request unanswered this long is resent
TAIL_S: Final = 8.0  # nothing new asked this close to the load's end
EXPIRING: Final = 2  # requests left to expire waiting at once (within the 4 prompts per app)
EXPIRY_S: Final = DEFAULT_PROMPT_TIMEOUT_S
ALLOW_EVERY_S: Final = (1.5, 4.0)
# The hostbridge's own refusals (`_surfaces.SurfaceRelay._check`): such a request went no
# further.
NOT_RELAYED: Final = frozenset(
    {
        "app_instance_not_found",
        "surface_not_found",
        "bridge_rate_limited",
        "bridge_params_invalid",
        "bridge_method_unknown",
        "bridge_message_too_large",
    }
)
_POLL_S: Final = 0.25


@dataclass
class _Asked:
    """One capability request's sends from the pad's Surface, all under its one request id."""

    instance_id: str  # the pad asked at
    sent_at: float = 0.0  # when last sent
    sends: int = 0
    refused: int = 0  # sends the hostbridge refused itself (`NOT_RELAYED`): never relayed


@dataclass
class SurfacesExercise:
    seed: int
    name: str = "surfaces"
    log: SessionLog = field(default_factory=SessionLog)
    plans: dict[str, Plan] = field(default_factory=dict)
    unrelayed: set[str] = field(default_factory=set)  # request ids that never reached the gateway
    counts: Counter[str] = field(default_factory=Counter)
    live: set[str] = field(default_factory=set)  # drill-pad instances the Shell shows
    surface_of: dict[str, str] = field(default_factory=dict)  # instance id -> its Surface id
    pad_of: dict[int, str] = field(default_factory=dict)  # pad number -> its instance id
    _replies: dict[str, dict[str, Any]] = field(default_factory=dict)
    _waiting: set[str] = field(default_factory=set)
    _ids: Any = field(default_factory=itertools.count)
    _user: Any = None
    _prompts: PromptUser | None = None
    gone: set[str] = field(default_factory=set)  # pads the Shell showed, and shows no more
    _finished: bool = False  # the load is over: every pad still open is closed
    _cap_pad: int | None = None
    _asked: dict[str, _Asked] = field(default_factory=dict)  # request id -> its sends
    _opened: dict[int, str] = field(default_factory=dict)  # pad number -> its open call
    _done: set[int] = field(default_factory=set)
    endings: dict[str, dict[str, int]] = field(default_factory=dict)
    ended_with_gateway: int = 0  # requests a restarted gateway ended `actor_restarted`

    def prepare(self, setup: Setup) -> list[str]:
        return ["--dev-app", str(DRILL_PAD)]

    # ------------------------------------------------------------------ the Shell's frames

    def _take(self, frame: dict[str, Any]) -> None:
        kind = frame.get("type")
        if kind == "shell.apps":
            live = {
                str(i["instance_id"])
                for i in frame.get("instances") or []
                if i.get("app_scope") == PAD_SCOPE
            }
            self.gone |= self.live - live
            self.live = live
        elif kind == "shell.view" and frame.get("app_scope") == PAD_SCOPE:
            instance_id, view = str(frame.get("instance_id")), frame.get("view") or {}
            if view.get("kind") == SURFACE_VIEW_KIND and isinstance(view.get("surface_id"), str):
                self.surface_of[instance_id] = view["surface_id"]
                n = (view.get("state") or {}).get("n")
                if isinstance(n, int):
                    self.pad_of[n] = instance_id
            else:
                self.surface_of.pop(instance_id, None)
        elif kind == "shell.surface.reply":
            request_id = str(frame.get("request_id"))
            if request_id in self._waiting:
                self._replies[request_id] = frame
            if request_id in self.plans:
                self._answered(self.plans[request_id], frame)

    async def _request(
        self,
        instance_id: str,
        method: str,
        params: dict[str, Any],
        request_id: str | None = None,
        timeout: float = REQUEST_S,
    ) -> dict[str, Any] | None:
        """The reply frame, a `no_surface` error, or None: not answered (lost, or too slow)."""
        surface_id = self.surface_of.get(instance_id)
        if surface_id is None:
            return {"error": {"code": "no_surface"}}
        request_id = request_id or f"drill-sr-{self.seed}-{next(self._ids)}"
        self._replies.pop(request_id, None)
        self._waiting.add(request_id)
        try:
            reconnects = self._user.reconnects
            frame = {
                "type": "surface.request",
                "request_id": request_id,
                "instance_id": instance_id,
                "surface_id": surface_id,
                "method": method,
                "params": params,
            }
            if not await self._user.send(frame):
                await trio.sleep(_POLL_S)  # the Shell is reconnecting
                return None
            with trio.move_on_after(timeout):
                while request_id not in self._replies and self._user.reconnects == reconnects:
                    await self._user.changed()
            return self._replies.pop(request_id, None)
        finally:
            self._waiting.discard(request_id)

    # ------------------------------------------------------------------ driving

    async def drive(self, stage: Stage, seconds: float) -> None:
        self._user = stage.user
        stage.user.listeners.append(self._take)
        self._prompts = PromptUser(stage.user, self.plans)
        calls = Calls(stage.agent, stage.client)
        rng = random.Random(self.seed + 13)
        end = trio.current_time() + seconds
        await stage.agent.inventory_known()
        # Posts are never cancelled (a call half posted would be one the Agent never made);
        # the rest stops with the load, and `unsettled` carries on from there.
        async with trio.open_nursery() as posts, trio.open_nursery() as load:
            load.start_soon(self._prompts.run)
            load.start_soon(self._capability_pad, calls, posts, end)
            while trio.current_time() < end - TAIL_S:
                if self._writing() < PADS:
                    n = self._open(calls, posts)
                    load.start_soon(self._pad, n, random.Random(rng.random()), end)
                await trio.sleep(rng.uniform(0.3, 1.0))
            await trio.sleep_until(end)
            load.cancel_scope.cancel()
        self._finished = True

    def _writing(self) -> int:
        """The written pads opened and not yet done with."""
        return sum(1 for n in self._opened if n not in self._done and n != self._cap_pad)

    def _open(self, calls: Calls, posts: trio.Nursery) -> int:
        n = len(self._opened) + 1
        call_id = f"call-drill-{self.seed}-pad{n}"
        self._opened[n] = call_id
        self.counts["opened"] += 1
        posts.start_soon(calls.post, call_id, f"{PAD_SCOPE}.open", {"n": n})
        return n

    async def _mounted(self, n: int, until: float) -> str | None:
        """The pad's instance once its Surface is shown, or None by `until`."""
        while trio.current_time() < until:
            instance_id = self.pad_of.get(n)
            if instance_id is not None and instance_id in self.surface_of:
                return instance_id
            with trio.move_on_after(1.0):
                await self._user.changed()
        return None

    async def _read(self, instance_id: str, method: str = "subscribe") -> int | None:
        """Read the pad's session data (mount, reload or after an unknown write) until it is
        answered; its revision, or None once the pad is gone."""
        for _ in range(60):
            pad = self.log.of(instance_id)
            floor = pad.newest()
            reply = await self._request(instance_id, f"lineup/session-data/{method}", {})
            result = (reply or {}).get("result")
            if result is not None:
                revision = int(result.get("revision", 0))
                self.log.read(instance_id, floor, revision, result.get("data"))
                return revision
            if instance_id in self.gone:
                return None
            await trio.sleep(_POLL_S)
        return None

    async def _pad(self, n: int, rng: random.Random, end: float) -> None:
        try:
            instance_id = await self._mounted(n, end)
            if instance_id is None:
                return
            revision = await self._read(instance_id)
            for i in range(rng.randint(*WRITES)):
                if revision is None:
                    return
                if rng.random() < RELOAD:
                    self.counts["reloaded"] += 1
                    revision = await self._read(instance_id)
                    continue
                value = {"pad": n, "write": i, "nonce": rng.randrange(2**32)}
                self.log.sent(instance_id, value)
                reply = await self._request(
                    instance_id,
                    "lineup/session-data/replace",
                    {"data": value, "expected_revision": revision},
                )
                result = (reply or {}).get("result")
                if result is not None:
                    revision = int(result["revision"])
                    self.log.acked(instance_id, revision, value)
                    self.counts["writes_acked"] += 1
                else:
                    code = ((reply or {}).get("error") or {}).get("code", "lost")
                    self.counts[f"writes_{code}"] += 1
                    revision = await self._read(instance_id, "get")
                await trio.sleep(rng.uniform(*WRITE_PAUSE_S))
            await self._close(instance_id)
        finally:
            self._done.add(n)

    async def _close(self, instance_id: str) -> None:
        if await self._user.close(instance_id):
            self.counts["closed"] += 1

    # ------------------------------------------------------------------ capabilities

    async def _capability_pad(self, calls: Calls, posts: trio.Nursery, end: float) -> None:
        rng = random.Random(self.seed + 19)
        instance_id: str | None = None
        async with trio.open_nursery() as expiring:
            while trio.current_time() < end - TAIL_S:
                if instance_id is None or instance_id in self.gone:  # none yet, or it ended
                    if self._cap_pad is not None:
                        self._done.add(self._cap_pad)
                    n = self._cap_pad = self._open(calls, posts)
                    instance_id = await self._mounted(n, end)
                    if instance_id is None:
                        break
                # The first ones whatever the run's length (the drill waits for them), then
                # only ones that expire within the load.
                opening = sum(1 for p in self.plans.values() if p.script == "expire") < EXPIRING
                if self._unanswered("expire") < EXPIRING and (
                    opening or trio.current_time() + EXPIRY_S < end - TAIL_S
                ):
                    expiring.start_soon(self._ask, instance_id, "expire")
                    await trio.sleep(1.0)  # each its own prompt, one after the other
                    continue
                if self._unanswered("allow") == 0:
                    await self._ask(instance_id, "allow")
                await trio.sleep(rng.uniform(*ALLOW_EVERY_S))
            expiring.cancel_scope.cancel()  # they end a minute after: `unsettled` waits

    def _unanswered(self, script: str) -> int:
        return sum(1 for p in self.plans.values() if p.script == script and not p.over)

    async def _ask(self, instance_id: str, script: Script) -> Plan:
        """Ask at the pad's Surface and wait for the answer; sent again under the same id
        when the answer does not come (a reconnected Shell, a slow runtime)."""
        request_id = f"drill-pad-{self.seed}-cap{len(self.plans)}"
        plan = self.plans[request_id] = Plan(request_id, script, "surface", trio.current_time())
        self._asked[request_id] = _Asked(instance_id)
        while not plan.over:
            if self._pad_gone(plan):
                break
            reconnects = self._user.reconnects
            await self._send_ask(plan)
            with trio.move_on_after(CAPABILITY_S):
                while not plan.over and self._user.reconnects == reconnects:
                    await self._user.changed()
        return plan

    def _pad_gone(self, plan: Plan) -> bool:
        """The pad asked at has ended: the Surface, its requester, is gone with it (over)."""
        asked = self._asked[plan.request_id]
        if asked.instance_id not in self.gone or plan.over:
            return False
        if asked.refused == asked.sends:
            self.unrelayed.add(plan.request_id)  # never relayed: nothing was asked
        plan.over = True
        return True

    async def _send_ask(self, plan: Plan) -> None:
        asked = self._asked[plan.request_id]
        asked.sent_at = trio.current_time()
        surface_id = self.surface_of.get(asked.instance_id)
        if surface_id is None:
            return  # focus restarted: the app opens it again, then it is sent
        frame = {
            "type": "surface.request",
            "request_id": plan.request_id,
            "instance_id": asked.instance_id,
            "surface_id": surface_id,
            "method": "lineup/capabilities/request",
            "params": {
                "capability": CAPABILITY,
                "purpose": purpose_of(plan.request_id),
                "input": {"title": plan.request_id},
            },
        }
        asked.sends += 1
        await self._user.send(frame)

    def _answered(self, plan: Plan, frame: dict[str, Any]) -> None:
        """A reply to a Surface's capability request (to any of its sends)."""
        result = frame.get("result")
        if result is not None:
            plan.answers.append((str(result.get("status")), result.get("code")))
            plan.over = True
            return
        if (frame.get("error") or {}).get("code") not in NOT_RELAYED:
            return  # past the hostbridge: it may be decided, and is asked again
        asked = self._asked[plan.request_id]
        asked.refused += 1
        if asked.refused == asked.sends and not plan.over:
            # Every send refused before the gateway: nothing was asked. A refusal of a later
            # send says nothing of an earlier one still unanswered, which may have been asked.
            self.unrelayed.add(plan.request_id)
            plan.over = True

    # ------------------------------------------------------------------ the exercise

    async def unsettled(self, stage: Stage) -> int:
        if self._user is None:
            return 0
        if self._finished:  # a pad mounted late, or one whose close was lost
            for instance_id in sorted(self.live):
                await self._user.close(instance_id)
        if self._prompts is not None:
            await self._prompts.answer_shown()
        for plan in self.plans.values():
            late = trio.current_time() - self._asked[plan.request_id].sent_at > RESEND_S
            if not plan.over and not self._pad_gone(plan) and late:
                await self._send_ask(plan)
        left = len(self.live) + sum(1 for p in self.plans.values() if not p.over)
        left += open_requests(stage.setup.runtime_dir / "lineup.db")  # a killed gateway's
        return left + (self._prompts.waiting() if self._prompts is not None else 0)

    def check(self, setup: Setup) -> list[Invariant]:
        store = setup.runtime_dir / "lineup.db"
        audit = CapabilityAudit.read(store)
        asked = [p for p in self.plans.values() if p.request_id not in self.unrelayed]
        requests = check_requests(asked, audit)
        requests.name = "surface_capability_requests_end_once"
        for request_id in sorted(self.unrelayed):
            if audit.finals.get(request_id):
                requests.breach(f"{request_id}: audited, yet the hostbridge refused it")
        self.endings = endings(asked, audit)
        self.ended_with_gateway = sum(1 for plan in asked if audit.ended_with_gateway(plan))
        stored = stored_session_data(store, PAD_SCOPE)
        return [
            check_session_data(self.log, stored),
            check_no_write_after_end(write_and_end_times(store, PAD_SCOPE)),
            requests,
        ]

    def report(self) -> dict[str, Any]:
        pads = self.log.pads.values()
        return {
            "pads_opened": self.counts["opened"],
            "pads_closed": self.counts["closed"],
            "reloads": self.counts["reloaded"],
            "writes_sent": sum(len(p.sent) for p in pads),
            "writes_acked": sum(len(p.acks) for p in pads),
            "reads": sum(len(p.reads) for p in pads),
            "writes_not_acked": {
                k.removeprefix("writes_"): v
                for k, v in sorted(self.counts.items())
                if k.startswith("writes_") and k != "writes_acked"
            },
            "capability_requests": len(self.plans),
            "capabilities_ended_by_script": self.endings,
            "capabilities_not_relayed": len(self.unrelayed),
            "capabilities_ended_with_gateway": self.ended_with_gateway,
        }
