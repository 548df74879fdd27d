"""The capability gateway's bookkeeping, without I/O: its configuration, the rate limit, the
results it keeps for repeats, and the prompts and provider runs waiting on the user.

Everything here is bounded: the results kept (an LRU), the windows of the rate limit (one deque
per app and capability, at most its limit long, the pairs themselves bounded by the apps and the
catalog), and the pending prompts and runs: at most `MAX_WAITING_PROMPTS_PER_APP` of one app's
(its next request is refused `rate_limited` before it asks anything, and no other app's is), and
`MAX_PENDING` of all apps together (a safety bound, as many as the hostbridge and the Shell hold:
sixteen apps at their own bound), so a loop of requests cannot pile up prompts or hold the
mailbox. `PromptQuiet` keeps, per app and capability, until when the user is not to be asked
again after a Deny or a dismissal (`PROMPT_QUIET_S`; bounded by the apps and the catalog, the
past ones dropped as new ones come).
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, cast

import trio

from lineup.facts.errors import ErrorCode
from lineup.hostbridge.messages import CapabilityPromptView, ProviderRunView
from lineup.sdk.capabilities import (
    CATALOG,
    DEFAULT_PROMPT_TIMEOUT_S,
    MAX_WAITING_PROMPTS_PER_APP,
    PROMPT_QUIET_S,
    Policy,
    PromptDecision,
)
from lineup.sdk.protocol import CapabilityResult

__all__ = [
    "DEFAULT_RUN_TIMEOUT_S",
    "KEPT_RESULTS",
    "MAX_PENDING",
    "ORPHAN_GRACE_S",
    "TRANSIENT",
    "CapabilityConfig",
    "Pending",
    "PendingBook",
    "PromptQuiet",
    "RateLimiter",
    "ResultCache",
]

# A request a killed gateway left waiting stays open this long after the restart for its
# requester to ask again (a live one does within seconds: its bus retries), then ends.
ORPHAN_GRACE_S: Final = 30.0
DEFAULT_RUN_TIMEOUT_S: Final = 120.0  # a provider run in the Shell (a file picker) ends by then
KEPT_RESULTS: Final = 1024  # decided results a repeated request id is answered from
MAX_PENDING: Final = 64  # prompts and runs waiting on the user at once, all apps together
RATE_WINDOW_S: Final = 60.0
# A failure on the way (a peer restarting): its result is not kept, so a retry decides afresh.
TRANSIENT: Final = frozenset(
    {
        ErrorCode.ACTOR_RESTARTED,
        ErrorCode.ACTOR_UNAVAILABLE,
        ErrorCode.DEADLINE_EXCEEDED,
        ErrorCode.STORE_UNAVAILABLE,
    }
)
_POLICIES: Final = frozenset({"allow", "deny", "ask"})


@dataclass(frozen=True)
class CapabilityConfig:
    """The host's capability configuration (`RuntimeOptions.capabilities`): capabilities
    switched off here, the host's policy per app and capability, the prompt's and a run's
    timeouts, per-capability rate limits replacing the catalog's, and how long an app is not
    asked again after a Deny or a dismissal (`PromptQuiet`)."""

    unsupported: frozenset[str] = frozenset()
    policy: Mapping[str, Mapping[str, Policy]] = field(default_factory=dict)
    prompt_timeout_s: float = DEFAULT_PROMPT_TIMEOUT_S
    run_timeout_s: float = DEFAULT_RUN_TIMEOUT_S
    rate_per_minute: Mapping[str, int] = field(default_factory=dict)
    prompt_quiet_s: float = PROMPT_QUIET_S  # 0: an app may ask again at once after a Deny
    # After a restart: how long a request the killed gateway left waiting stays open for its
    # requester to ask again under its id (`_journal`).
    orphan_grace_s: float = ORPHAN_GRACE_S

    @classmethod
    def from_config(cls, raw: Mapping[str, Any] | None) -> CapabilityConfig:
        """Read the child config's `capabilities` (missing: the catalog's defaults). A value
        of the wrong shape raises ValueError: a host misconfigured fails at start, loudly."""
        conf = dict(raw or {})
        policy: dict[str, dict[str, Policy]] = {}
        for scope, per_cap in dict(conf.get("policy") or {}).items():
            policy[str(scope)] = {}
            for cap, value in dict(per_cap).items():
                if value not in _POLICIES:
                    raise ValueError(f"capability policy {value!r} is not allow, deny or ask")
                policy[str(scope)][str(cap)] = cast(Policy, value)
        prompt = float(conf.get("prompt_timeout_s", DEFAULT_PROMPT_TIMEOUT_S))
        run = float(conf.get("run_timeout_s", DEFAULT_RUN_TIMEOUT_S))
        quiet = float(conf.get("prompt_quiet_s", PROMPT_QUIET_S))
        grace = float(conf.get("orphan_grace_s", ORPHAN_GRACE_S))
        if not (0 < prompt <= 3600 and 0 < run <= 3600 and 0 <= quiet <= 3600):
            raise ValueError("capability timeouts must be within (0, 3600] seconds")
        if not 0 <= grace <= 3600:
            raise ValueError("orphan_grace_s must be within [0, 3600] seconds")
        rates = {str(k): int(v) for k, v in dict(conf.get("rate_per_minute") or {}).items()}
        if any(v < 0 for v in rates.values()):
            raise ValueError("a rate limit is never negative")
        return cls(
            unsupported=frozenset(str(c) for c in conf.get("unsupported") or ()),
            policy=policy,
            prompt_timeout_s=prompt,
            run_timeout_s=run,
            rate_per_minute=rates,
            prompt_quiet_s=quiet,
            orphan_grace_s=grace,
        )

    def host_policy(self, app_scope: str) -> Mapping[str, Policy]:
        return self.policy.get(app_scope, {})

    def rate_of(self, capability: str) -> int:
        spec = CATALOG.get(capability)
        return self.rate_per_minute.get(capability, spec.rate_per_minute if spec else 0)


class RateLimiter:
    """At most `limit` runs per app and capability in any sliding minute."""

    def __init__(self) -> None:
        self._windows: dict[tuple[str, str], deque[float]] = {}

    def take(self, app_scope: str, capability: str, limit: int, now: float) -> bool:
        """Count one run at `now` if the window has room; False (nothing counted) if not."""
        window = self._windows.setdefault((app_scope, capability), deque())
        while window and window[0] <= now - RATE_WINDOW_S:
            window.popleft()
        if len(window) >= limit:
            return False
        window.append(now)
        return True


class ResultCache:
    """The results decided lately, by (who asked, request id): a repeat gets the same one."""

    def __init__(self, size: int = KEPT_RESULTS) -> None:
        self._size = size
        self._results: OrderedDict[tuple[str, str], CapabilityResult] = OrderedDict()

    def get(self, key: tuple[str, str]) -> CapabilityResult | None:
        found = self._results.get(key)
        if found is not None:
            self._results.move_to_end(key)
        return found

    def put(self, key: tuple[str, str], result: CapabilityResult) -> None:
        self._results[key] = result
        self._results.move_to_end(key)
        while len(self._results) > self._size:
            self._results.popitem(last=False)


@dataclass
class Pending:
    """One prompt or provider run waiting on the user: its view (what the Shells show) and
    the answer, set once (the first wins)."""

    view: CapabilityPromptView | ProviderRunView
    answered: trio.Event = field(default_factory=trio.Event)
    decision: PromptDecision | None = None  # a prompt's
    outcome: Any = None  # a run's `ProviderDoneRequest`


class PendingBook:
    """The prompts and runs waiting now, by id. An entry is added before the Shells are told
    and removed in the waiter's `finally`, so an answer after the end finds nothing."""

    def __init__(
        self, limit: int = MAX_PENDING, per_app: int = MAX_WAITING_PROMPTS_PER_APP
    ) -> None:
        self._limit = limit
        self._per_app = per_app
        self._pending: dict[str, Pending] = {}

    def full(self, app_scope: str) -> bool:
        """No room for another of `app_scope`'s: it has `per_app` waiting, or all apps
        together have `limit`."""
        if len(self._pending) >= self._limit:
            return True
        mine = sum(1 for e in self._pending.values() if e.view.app_scope == app_scope)
        return mine >= self._per_app

    def siblings(self, view: CapabilityPromptView) -> list[Pending]:
        """The other prompts still waiting of the same app for the same capability."""
        return [
            e
            for e in self._pending.values()
            if isinstance(e.view, CapabilityPromptView)
            and e.view is not view
            and not e.answered.is_set()
            and (e.view.app_scope, e.view.capability) == (view.app_scope, view.capability)
        ]

    def add(self, key: str, view: CapabilityPromptView | ProviderRunView) -> Pending:
        entry = self._pending[key] = Pending(view)
        return entry

    def remove(self, key: str) -> None:
        self._pending.pop(key, None)

    def waiting(self, key: str) -> Pending | None:
        """The entry if it is still waiting for its answer (None: unknown, ended, answered)."""
        entry = self._pending.get(key)
        return entry if entry is not None and not entry.answered.is_set() else None

    def prompts(self) -> tuple[CapabilityPromptView, ...]:
        return tuple(
            e.view
            for e in self._pending.values()
            if isinstance(e.view, CapabilityPromptView) and not e.answered.is_set()
        )

    def runs(self) -> tuple[ProviderRunView, ...]:
        return tuple(
            e.view
            for e in self._pending.values()
            if isinstance(e.view, ProviderRunView) and not e.answered.is_set()
        )


class PromptQuiet:
    """Per app and capability, until when its requests are not to prompt: set when the user
    denies or dismisses one (`quiet_s` from then), lifted by an allow."""

    def __init__(self, quiet_s: float = PROMPT_QUIET_S) -> None:
        self._quiet_s = quiet_s
        self._until: dict[tuple[str, str], float] = {}

    def quiet(self, app_scope: str, capability: str, now: float) -> bool:
        return self._until.get((app_scope, capability), now) > now

    def hush(self, app_scope: str, capability: str, now: float) -> None:
        for key in [k for k, until in self._until.items() if until <= now]:
            del self._until[key]  # bounded: only the pairs still quiet are kept
        self._until[app_scope, capability] = now + self._quiet_s

    def lift(self, app_scope: str, capability: str) -> None:
        self._until.pop((app_scope, capability), None)
