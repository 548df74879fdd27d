"""The `surfaces` exercise: Surfaces opened, written, reloaded and closed, and a Surface's own
capability requests denied and dismissed, while the faults hit.

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

One more pad stays open for the capability requests (`_prompts`): Deny, then at once a request
the runtime must refuse `rate_limited` (the app was just denied: it is hushed for 30 s), then,
once the hush is over, a dismissal and a hushed one again, then an Allow, and round again. A
request whose answer is lost is sent again under the same request id after the Shell
reconnects (the gateway answers a repeat without asking again).

After the load the exercise closes its pads; `unsettled` counts the requests still waiting,
the pads still open (and closes them again) and its prompts still shown.
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Final

import trio

from lineup.facts.views import SURFACE_VIEW_KIND
from lineup.sdk.capabilities import PROMPT_QUIET_S

from ._calls import Calls, settle
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
    purpose_of,
)
from ._session_data import SessionLog, check_session_data, stored_session_data

__all__ = ["SurfacesExercise"]

PAD_SCOPE: Final = "drill-pad"
PADS: Final = 3  # written pads open at once (and the capability pad)
WRITES: Final = (3, 12)  # writes to one pad before the user closes it
RELOAD: Final = 0.2  # the chance of a reload before a write
WRITE_PAUSE_S: Final = (0.05, 0.4)
REQUEST_S: Final = 8.0  # a bridge request not answered by then is taken as lost
CAPABILITY_S: Final = 90.0  # a capability request waits on the prompt (no expiry here)
ASK_BOUND_S: Final = 240.0
TAIL_S: Final = 8.0  # nothing new asked this close to the load's end
CYCLE: Final[tuple[Script, ...]] = ("deny", "cancel", "allow")
# The hostbridge's own refusals (`_surfaces.SurfaceRelay._check`): such a request went no
# further. `no_surface`: the exercise had no Surface to send it to.
NOT_RELAYED: Final = frozenset(
    {
        "app_instance_not_found",
        "surface_not_found",
        "bridge_rate_limited",
        "bridge_params_invalid",
        "bridge_method_unknown",
        "bridge_message_too_large",
        "no_surface",
    }
)
_POLL_S: Final = 0.25


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
    _opened: dict[int, str] = field(default_factory=dict)  # pad number -> its open call
    _done: set[int] = field(default_factory=set)
    endings: dict[str, dict[str, int]] = field(default_factory=dict)

    def prepare(self, setup: Setup) -> list[str]:
        from .drillapp import drillpad  # the folder beside the drill app's own

        return ["--dev-app", str(drillpad.__file__).rsplit("/", 1)[0]]

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
        elif kind == "shell.surface.reply" and frame.get("request_id") in self._waiting:
            self._replies[str(frame["request_id"])] = frame

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
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._prompts.run)
            async with trio.open_nursery() as pads:
                pads.start_soon(self._capability_pad, calls, end)
                while trio.current_time() < end - TAIL_S:
                    if self._writing() < PADS:
                        n = await self._open(calls)
                        pads.start_soon(self._pad, n, random.Random(rng.random()), end)
                    await trio.sleep(rng.uniform(0.3, 1.0))
            self._finished = True
            await settle(lambda: self.unsettled(stage), ASK_BOUND_S)
            nursery.cancel_scope.cancel()

    def _writing(self) -> int:
        """The written pads opened and not yet done with."""
        return sum(1 for n in self._opened if n not in self._done and n != self._cap_pad)

    async def _open(self, calls: Calls) -> int:
        n = len(self._opened) + 1
        call_id = f"call-drill-{self.seed}-pad{n}"
        self._opened[n] = call_id
        self.counts["opened"] += 1
        await calls.post(call_id, f"{PAD_SCOPE}.open", {"n": n})
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

    async def _capability_pad(self, calls: Calls, end: float) -> None:
        n = self._cap_pad = await self._open(calls)
        instance_id = await self._mounted(n, end)
        if instance_id is None:
            return
        for script in itertools.cycle(CYCLE):
            if trio.current_time() > end - TAIL_S:
                break
            plan = await self._ask(instance_id, script)
            if script != "allow" and plan.answers and trio.current_time() < end - TAIL_S:
                hushed_until = trio.current_time() + PROMPT_QUIET_S + 1
                await self._ask(instance_id, "hushed")
                await trio.sleep_until(min(hushed_until, end))
        self._done.add(n)

    async def _ask(self, instance_id: str, script: Script) -> Plan:
        request_id = f"drill-pad-{self.seed}-cap{len(self.plans)}"
        plan = self.plans[request_id] = Plan(request_id, script, "surface", trio.current_time())
        params = {
            "capability": CAPABILITY,
            "purpose": purpose_of(request_id),
            "input": {"title": request_id},
        }
        relayed = False  # once sent and not refused by the hostbridge, it may be decided
        with trio.move_on_after(ASK_BOUND_S):
            while True:
                reply = await self._request(
                    instance_id,
                    "lineup/capabilities/request",
                    params,
                    request_id=request_id,
                    timeout=CAPABILITY_S,
                )
                result = (reply or {}).get("result")
                if result is not None:
                    plan.answers.append((str(result.get("status")), result.get("code")))
                    break
                code = ((reply or {}).get("error") or {}).get("code")
                if code in NOT_RELAYED and not relayed:
                    self.unrelayed.add(request_id)
                    break
                relayed = relayed or code not in NOT_RELAYED  # lost, or the relay failed
                await trio.sleep(_POLL_S)
        plan.over = True
        return plan

    # ------------------------------------------------------------------ the exercise

    async def unsettled(self, stage: Stage) -> int:
        if self._user is None:
            return 0
        if self._finished:  # a pad mounted late, or one whose close was lost
            for instance_id in sorted(self.live):
                await self._user.close(instance_id)
        left = len(self.live) + sum(1 for p in self.plans.values() if not p.over)
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
        stored = stored_session_data(store, PAD_SCOPE)
        return [check_session_data(self.log, stored), requests]

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
        }
