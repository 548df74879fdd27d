"""The capability gateway (seed 004 §6.3, seed 000 §7.3): a MiniApp's (or its Surface's) request
for a system power, decided, confirmed by the user where the policy asks, rate limited, and run
by a host provider.

Theory of operation. `CapabilityGate.request` runs one request through, in order: what focus
knows of the app and the instance (`focus.capability.context`), the user's grant (`_grants`),
`lineup.sdk.capabilities.decide` (declared, enabled and live, supported here, in front where
needed, the policy), then the capability's input, the checks of what it names (an artifact to
save or install must be the app's), the runtime's own permission prompt where the policy says
ask (told to the hostbridge; the user's answer comes back as `gateway.ui.prompt.answer`), the
rate limit, and the provider (the Shell, told through the hostbridge, answering with
`gateway.ui.provider.done`; or focus, for the registry). Every wait is bounded: by the
configured timeouts and by the caller's own deadline (`Envelope.deadline_ms`). A prompt or run
is registered before the Shells are told and removed in `finally`, so an answer that comes after
its end is `prompt_not_found`, never a leak.

Prompts are fair and bounded per app (issue 27, a prompt bomb). The Shell shows one prompt at
a time and is modal while it does, so an app that keeps prompts waiting, and asks again as each
is answered, could keep the user from the header's Permissions button for good. Hence: at most
`MAX_WAITING_PROMPTS_PER_APP` of one app's prompts wait (its next request is `rate_limited`, no
other app's is); the Shell takes the next prompt from the app it served longest ago, so apps
interleave; the prompt offers Block (a grant of deny, as the Permissions page's Block: the next
request is `policy_denied` without a prompt); and a Deny, a Block or a dismissal answers the
app's other waiting prompts of that capability the same, after which, for `prompt_quiet_s`
(30 s), its requests of that capability are refused `rate_limited` without a prompt. So one
dismissal per app and capability leaves the Shell without a modal prompt long enough to reach
the Permissions page; an Allow lifts the quiet at once.

Each request ends in ONE `CapabilityResult`, kept (by who asked and the request id) so that a
repeat is answered the same without asking the user again; a transient failure (a peer
restarting) is not kept, so its retry decides afresh. Every step is audited by ids (the app,
the request id, the capability, the decision or code), never the purpose, the input, the output
or a file's name; a request's end other than `completed` goes through the per-offender bound
(`Bus.audit_refusal`, the offender its app), so a loop of refused requests writes a few rows a
second and one counter row, not a row each.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

import trio
from pydantic import BaseModel, ValidationError

from lineup.actors.focus.messages import (
    AppOperationInfo,
    CapabilityContextReply,
    CapabilityContextRequest,
    RegistryInspectReply,
    RegistryInspectRequest,
    RegistryInstallRequest,
    RegistryOperateRequest,
)
from lineup.actors.kernel import Bus
from lineup.actors.kernel.audit import AuditRecord
from lineup.actors.kernel.errors import ErrorCode, LineUpError
from lineup.actors.store import messages as store
from lineup.hostbridge.messages import (
    CapabilityEndedEvent,
    CapabilityPromptEvent,
    CapabilityPromptView,
    ProviderRunEvent,
    ProviderRunView,
)
from lineup.sdk import capabilities as caps
from lineup.sdk import mcp_grants, mcp_network
from lineup.sdk import protocol as sdk
from lineup.sdk.protocol import ARTIFACT_MEDIA_TYPES, CapabilityResult

from ._artifacts import check_name, decode_content
from ._capability_state import (
    TRANSIENT,
    CapabilityConfig,
    PendingBook,
    PromptQuiet,
    RateLimiter,
    ResultCache,
)
from ._grants import Grants
from ._journal import Journal
from .messages import (
    CapabilityPendingReply,
    PickedFile,
    PromptAnswerRequest,
    ProviderDoneRequest,
    UiAccepted,
)

__all__ = ["ArtifactAccess", "Asked", "CapabilityGate"]

log = logging.getLogger("lineup.gateway")

FOCUS_TIMEOUT: Final = 10.0
REGISTRY_TIMEOUT: Final = 60.0  # verifying and unpacking a bundle
NOTIFY_TIMEOUT: Final = 2.0
CALLER_MARGIN_S: Final = 0.5  # answered this long before the caller stops waiting
_MANAGE_LINE: Final = {
    "enable": "Enable",
    "disable": "Disable",
    "rollback": "Roll back",
    "remove": "Remove",
    "set_default": "Make default:",
}


class ArtifactAccess(Protocol):
    """The gateway's artifact code, which the capabilities share with `gateway.sdk.artifact.*`."""

    async def create(self, scope: str, msg: sdk.ArtifactCreateRequest) -> sdk.ArtifactInfo: ...

    async def row(self, artifact_id: str) -> store.ArtifactRow | None: ...

    async def content(self, row: store.ArtifactRow, message_type: str) -> sdk.ArtifactContent: ...


@dataclass(frozen=True)
class Asked:
    """One request as the gateway got it. `scope` is the asking app's (None: a Surface's, the
    owner is found); `key` names it for repeats (who asked, their request id)."""

    key: tuple[str, str]
    scope: str | None
    request_id: str
    instance_id: str
    capability: str
    purpose: str
    input: dict[str, Any]
    deadline: float  # trio clock: the caller stops waiting then


class _Answered(Exception):
    """The request ended in an earlier life of the gateway: answered from its row."""

    def __init__(self, result: CapabilityResult) -> None:
        super().__init__(result.status)
        self.result = result


class _Ended(Exception):
    """The request's outcome, raised from deep in the pipeline (never leaves this module)."""

    def __init__(self, status: caps.CapabilityStatus, code: ErrorCode | None, event: str) -> None:
        super().__init__(status)
        self.status, self.code, self.event = status, code, event


@dataclass
class _Flight:
    done: trio.Event = field(default_factory=trio.Event)
    result: CapabilityResult | None = None


@dataclass
class _Facts:
    """What the pipeline learnt of one request on its way."""

    asked: Asked
    context: CapabilityContextReply
    parsed: BaseModel | None = None
    artifact: sdk.ArtifactInfo | None = None  # artifact.save's
    bundle_b64: str | None = None  # app.install's
    bundle_sha256: str | None = None  # app.install's: the digest the user is shown
    detail: str = ""
    ask: bool = False  # the policy asks the user first


class CapabilityGate:
    def __init__(
        self,
        bus: Bus,
        actor: str,
        config: CapabilityConfig,
        artifacts: ArtifactAccess,
        soon: Callable[[Callable[[], Awaitable[None]]], None],
    ) -> None:
        self.bus = bus
        self._actor = actor
        self.config = config
        self._artifacts = artifacts
        self._soon = soon  # runs a fast-path tell in the background
        self._results = ResultCache()
        # The requests that wait, kept in the store (`_journal`).
        self.journal = Journal(bus, self._results, soon, config.orphan_grace_s)
        self._inflight: dict[tuple[str, str], _Flight] = {}
        self._pending = PendingBook()
        self._rate = RateLimiter()
        self._quiet = PromptQuiet(config.prompt_quiet_s)
        self.grants = Grants(bus, config, self._tell)  # the user's, and the permissions page

    # ------------------------------------------------------------------ a request

    async def request(self, asked: Asked) -> CapabilityResult:
        """The one result of `asked` (the same again for a repeat of its key while kept)."""
        with trio.move_on_at(asked.deadline - CALLER_MARGIN_S):
            await self.journal.restored.wait()
        if not self.journal.restored.is_set():  # the store has not answered since the start
            return _result(asked, "failed", ErrorCode.STORE_UNAVAILABLE)
        while True:
            kept = self._results.get(asked.key)
            if kept is not None:
                return kept
            flight = self._inflight.get(asked.key)
            if flight is None:
                break
            await flight.done.wait()  # bounded: the first one's every wait is
            if flight.result is not None:
                return flight.result
        flight = self._inflight[asked.key] = _Flight()
        try:
            result, keep = await self._decided(asked)
            flight.result = result
            if keep:
                self._results.put(asked.key, result)
            return result
        finally:
            del self._inflight[asked.key]
            flight.done.set()

    async def _decided(self, asked: Asked) -> tuple[CapabilityResult, bool]:
        scope = asked.scope
        output: dict[str, Any] | None = None
        try:
            context = await self._context(asked)
            scope = context.app_scope  # a Surface's request is its app's from here on
            facts = await self._checked(asked, context)
            output = await self._confirmed_and_run(facts)
            status: caps.CapabilityStatus = "completed"
            code: ErrorCode | None = None
            event = "completed"
        except _Answered as answered:
            return answered.result, True
        except _Ended as ended:
            status, code, event = ended.status, ended.code, ended.event
        except LineUpError as exc:  # a peer's refusal on the way: a controlled failure
            status, code, event = "failed", exc.code, "failed"
        result = _result(asked, status, code, output if status == "completed" else None)
        keep = code not in TRANSIENT
        if self.journal.holds(asked.key):  # it waited: its row ends it, with its audit row
            if keep:
                try:
                    return await self.journal.end(
                        asked.key, result, f"gateway.capability.{event}"
                    ), True
                except LineUpError as exc:
                    code, result = exc.code, _result(asked, "failed", exc.code)
            self.journal.orphan(asked.key, asked.deadline)
            log.info("gateway.capability_transient code=%s", code.value if code else "")
            return result, False
        if keep:
            outcome = code.value if code else status
            row = self._record(f"gateway.capability.{event}", scope, asked, outcome)
            if code is None:
                self.bus.audit(row)
            else:  # an app may ask in a loop: a few rows a second, then one counter row
                self.bus.audit_refusal(row)
        else:
            log.info("gateway.capability_transient code=%s", code.value if code else "")
        return result, keep

    async def _checked(self, asked: Asked, context: CapabilityContextReply) -> _Facts:
        """Steps 1–5 (`decide`), the input, and what it names: raises `_Ended` for a refusal."""
        self.grants.learn(context)
        grant = await self.grants.policy(context.app_scope, asked.capability)
        decision = caps.decide(
            asked.capability,
            declared=context.declared,
            enabled=context.enabled,
            live=context.live,
            foreground=context.foreground,
            unsupported=self.config.unsupported,
            host_policy=self.config.host_policy(context.app_scope),
            grant=grant,
        )
        if decision.action == "refuse":
            assert decision.status is not None
            raise _Ended(decision.status, decision.code, "refused")
        facts = _Facts(asked, context)
        try:
            if len(json.dumps(asked.input)) > caps.MAX_CAPABILITY_INPUT_BYTES:
                raise ValueError("input too large")
            facts.parsed = caps.parse_input(asked.capability, asked.input)
        except (ValidationError, ValueError, TypeError):
            raise _Ended("failed", ErrorCode.INVALID_ARGUMENTS, "refused") from None
        await self._named(facts)
        facts.ask = decision.action == "ask"
        return facts

    async def _context(self, asked: Asked) -> CapabilityContextReply:
        try:
            reply: CapabilityContextReply = await self.bus.request(
                "focus",
                CapabilityContextRequest(instance_id=asked.instance_id, app_scope=asked.scope),
                expect=CapabilityContextReply,
                timeout=FOCUS_TIMEOUT,
                retry=True,
            )
        except LineUpError as exc:
            if exc.code in TRANSIENT:
                raise
            raise _Ended("failed", ErrorCode.APP_INSTANCE_NOT_FOUND, "refused") from None
        return reply

    async def _own_artifact(self, facts: _Facts, artifact_id: str) -> store.ArtifactRow:
        row = await self._artifacts.row(artifact_id)
        if row is None or row.app_scope != facts.context.app_scope:
            # Another app's is answered exactly as a missing one.
            raise _Ended("failed", ErrorCode.ARTIFACT_NOT_FOUND, "refused")
        return row

    async def _named(self, facts: _Facts) -> None:
        """Check what the input names before the user is asked anything about it."""
        parsed = facts.parsed
        if isinstance(parsed, caps.ArtifactSave):
            row = await self._own_artifact(facts, parsed.artifact_id)
            content = await self._artifacts.content(row, sdk.CapabilityRequest.TYPE)
            facts.artifact = content.info
        elif isinstance(parsed, caps.AppInstall):
            # The bundle is one of the app's artifacts, or one of the local catalog's by name.
            if parsed.artifact_id is not None:
                row = await self._own_artifact(facts, parsed.artifact_id)
                content = await self._artifacts.content(row, sdk.CapabilityRequest.TYPE)
                facts.bundle_b64 = content.content_b64
                inspect = RegistryInspectRequest(bundle_b64=facts.bundle_b64)
            else:
                inspect = RegistryInspectRequest(catalog_file=parsed.catalog_file)
            inspected: RegistryInspectReply = await self.bus.request(
                "focus", inspect, expect=RegistryInspectReply, timeout=REGISTRY_TIMEOUT
            )
            if inspected.code is not None:
                raise _Ended("failed", _code(inspected.code), "refused")
            facts.bundle_sha256 = inspected.sha256
            # The app by its title (its verified manifest's), its version, and who signed it.
            name = inspected.title or inspected.app_scope
            facts.detail = f"{name} {inspected.version}, signed by {inspected.key_id}"
        elif isinstance(parsed, caps.AppManage):
            facts.detail = f"{_MANAGE_LINE[parsed.operation]} {parsed.app_scope}"
        elif isinstance(parsed, caps.SurfaceAccess):
            # What the app's manifest declares, in the runtime's words: the grant is for those.
            facts.detail = mcp_grants.describe(facts.asked.capability, facts.context.surface_access)
        elif isinstance(parsed, caps.McpServerNetwork):
            facts.detail = mcp_network.describe(facts.context.mcp_network)

    # ------------------------------------------------------------------ the user, the provider

    async def _confirmed_and_run(self, facts: _Facts) -> dict[str, Any]:
        asked, scope = facts.asked, facts.context.app_scope
        if facts.ask:
            await self._prompt(facts)
        if not self._rate.take(
            scope, asked.capability, self.config.rate_of(asked.capability), trio.current_time()
        ):
            raise _Ended("failed", ErrorCode.RATE_LIMITED, "refused")
        spec = caps.CATALOG[asked.capability]
        if spec.provider == "runtime":
            return {}  # the grant is the outcome: the hostbridge applies it to the Surface
        if spec.provider == "focus":
            return await self._registry(facts)
        return await self._host_run(facts)

    async def _open(self, facts: _Facts) -> None:
        """Before anyone is asked or told: the request's row (see `_journal`)."""
        asked = facts.asked
        kept = await self.journal.open(
            asked.key, facts.context.app_scope, asked.capability, asked.deadline
        )
        if kept is not None:
            raise _Answered(kept)

    def _wait_for(self, timeout: float, deadline: float) -> float:
        """How long a wait on the user may last: its timeout, within the caller's patience."""
        return max(0.0, min(timeout, deadline - CALLER_MARGIN_S - trio.current_time()))

    async def _prompt(self, facts: _Facts) -> None:
        asked, ctx = facts.asked, facts.context
        spec = caps.CATALOG[asked.capability]
        if self._pending.full(ctx.app_scope) or self._quiet.quiet(
            ctx.app_scope, asked.capability, trio.current_time()
        ):
            raise _Ended("failed", ErrorCode.RATE_LIMITED, "refused")
        wait = self._wait_for(self.config.prompt_timeout_s, asked.deadline)
        prompt_id = f"prm-{uuid.uuid4().hex}"
        view = CapabilityPromptView(
            prompt_id=prompt_id,
            app_scope=ctx.app_scope,
            app_title=ctx.app_title,
            instance_id=ctx.instance_id,
            capability=asked.capability,
            purpose=asked.purpose,
            detail=facts.detail,
            rememberable=spec.rememberable,
            expires_at=time.time() + wait,
        )
        entry = self._pending.add(prompt_id, view)  # its place in the app's bound, at once
        try:
            await self._open(facts)  # from here on it waits on the user
            self._audit("gateway.capability.asked", ctx.app_scope, asked, "ask")
            self._tell("hostbridge", CapabilityPromptEvent(prompt=view))
            with trio.move_on_after(wait):
                await entry.answered.wait()
        finally:
            self._pending.remove(prompt_id)
            outcome = entry.decision or "expired"
            self._tell("hostbridge", CapabilityEndedEvent(id=prompt_id, outcome=outcome))
        self._audit("gateway.capability.answered", ctx.app_scope, asked, outcome)
        if entry.decision is None:
            raise _Ended("expired", ErrorCode.OPERATION_EXPIRED, "refused")
        if entry.decision == "cancel":
            raise _Ended("cancelled_by_user", ErrorCode.CANCELLED_BY_USER, "refused")
        if entry.decision == "block":
            await self.grants.put(ctx.app_scope, asked.capability, "deny")
        if entry.decision == "allow_always":
            await self.grants.put(ctx.app_scope, asked.capability, "allow")
        elif entry.decision != "allow_once":  # deny, block: only an Allow lets it through
            raise _Ended("permission_denied", ErrorCode.PERMISSION_DENIED, "refused")

    async def _host_run(self, facts: _Facts) -> dict[str, Any]:
        asked, ctx = facts.asked, facts.context
        assert facts.parsed is not None
        if self._pending.full(ctx.app_scope):
            raise _Ended("failed", ErrorCode.RATE_LIMITED, "refused")
        wait = self._wait_for(self.config.run_timeout_s, asked.deadline)
        run_id = f"run-{uuid.uuid4().hex}"
        view = ProviderRunView(
            run_id=run_id,
            app_scope=ctx.app_scope,
            app_title=ctx.app_title,
            instance_id=ctx.instance_id,
            capability=asked.capability,
            input=facts.parsed.model_dump(mode="json"),
            artifact=facts.artifact,
            expires_at=time.time() + wait,
        )
        entry = self._pending.add(run_id, view)  # its place in the app's bound, at once
        done: ProviderDoneRequest | None = None
        try:
            await self._open(facts)  # from here on it waits on the provider
            self._audit("gateway.capability.run", ctx.app_scope, asked, "run")
            self._tell("hostbridge", ProviderRunEvent(run=view))
            with trio.move_on_after(wait):
                await entry.answered.wait()
            done = entry.outcome
        finally:
            self._pending.remove(run_id)
            status = done.status if done is not None else "failed"
            self._tell("hostbridge", CapabilityEndedEvent(id=run_id, outcome=status))
        if done is None or done.status == "failed":
            raise _Ended("failed", ErrorCode.PROVIDER_FAILED, "failed")
        if done.status == "cancelled_by_user":
            raise _Ended("cancelled_by_user", ErrorCode.CANCELLED_BY_USER, "cancelled")
        if isinstance(facts.parsed, caps.FileOpen):
            return await self._picked(facts, facts.parsed, done.file)
        return {}

    async def _picked(
        self, facts: _Facts, wanted: caps.FileOpen, picked: PickedFile | None
    ) -> dict[str, Any]:
        """The user's file as a new artifact of the app's (its base name only, never a path)."""
        if picked is None:
            raise _Ended("failed", ErrorCode.PROVIDER_FAILED, "failed")
        allowed = wanted.media_types or ARTIFACT_MEDIA_TYPES
        if picked.media_type not in allowed:
            raise _Ended("failed", ErrorCode.ARTIFACT_INVALID, "failed")
        name = picked.name.replace("\\", "/").rsplit("/", 1)[-1]
        try:
            if len(decode_content(picked.content_b64)) > wanted.max_bytes:
                raise LineUpError(ErrorCode.ARTIFACT_TOO_LARGE, "over the request's max_bytes")
            check_name(name)
        except LineUpError as exc:
            raise _Ended("failed", exc.code, "failed") from None
        info = await self._artifacts.create(
            facts.context.app_scope,
            sdk.ArtifactCreateRequest(
                request_id=f"cap-{facts.asked.request_id}"[:200],
                instance_id=facts.context.instance_id,
                name=name,
                media_type=picked.media_type,
                content_b64=picked.content_b64,
            ),
        )
        return {"artifact": info.model_dump(mode="json")}

    async def _registry(self, facts: _Facts) -> dict[str, Any]:
        """app.install / app.manage: focus carries the operation out (the user confirmed it)."""
        await self._open(facts)  # from here on it waits on focus
        scope = facts.context.app_scope
        operation_id = f"cap-{scope}-{facts.asked.request_id}"[:200]
        request: RegistryInstallRequest | RegistryOperateRequest
        if isinstance(facts.parsed, caps.AppInstall):
            request = RegistryInstallRequest(
                operation_id=operation_id,
                bundle_b64=facts.bundle_b64,
                catalog_file=facts.parsed.catalog_file,
                sha256=facts.bundle_sha256,  # the bundle the user allowed, and no other
            )
        else:
            assert isinstance(facts.parsed, caps.AppManage)
            request = RegistryOperateRequest(
                operation_id=operation_id,
                kind=facts.parsed.operation,
                app_scope=facts.parsed.app_scope,
            )
        operation: AppOperationInfo = await self.bus.request(
            "focus", request, expect=AppOperationInfo, timeout=REGISTRY_TIMEOUT, retry=True
        )
        output = {"operation": operation.model_dump(mode="json")}
        if operation.state != "completed":
            raise _Ended("failed", _code(operation.code or "provider_failed"), "failed")
        return output

    # ------------------------------------------------------------------ the Shell's answers

    def answer(self, msg: PromptAnswerRequest) -> UiAccepted:
        entry = self._pending.waiting(msg.prompt_id)
        if entry is None or not isinstance(entry.view, CapabilityPromptView):
            raise LineUpError(ErrorCode.PROMPT_NOT_FOUND, "no such prompt waiting")
        if msg.decision == "allow_always" and not entry.view.rememberable:
            raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "this prompt cannot be remembered")
        view = entry.view
        if msg.decision in ("deny", "block", "cancel"):
            # A no stands for the app's other waiting prompts of this capability too, and the
            # app is not asked again for it for a while: the Shell is free to reach the
            # Permissions page.
            for sibling in self._pending.siblings(view):
                sibling.decision = msg.decision
                sibling.answered.set()
            self._quiet.hush(view.app_scope, view.capability, trio.current_time())
        else:
            self._quiet.lift(view.app_scope, view.capability)
        entry.decision = msg.decision
        entry.answered.set()
        return UiAccepted(id=msg.prompt_id)

    def provider_done(self, msg: ProviderDoneRequest) -> UiAccepted:
        entry = self._pending.waiting(msg.run_id)
        if entry is None or not isinstance(entry.view, ProviderRunView):
            raise LineUpError(ErrorCode.PROMPT_NOT_FOUND, "no such provider run waiting")
        entry.outcome = msg
        entry.answered.set()
        return UiAccepted(id=msg.run_id)

    def pending(self) -> CapabilityPendingReply:
        return CapabilityPendingReply(prompts=self._pending.prompts(), runs=self._pending.runs())

    # ------------------------------------------------------------------ helpers

    def _tell(self, peer: str, event: Any) -> None:
        async def tell() -> None:
            code = await self.bus.tell(peer, event, timeout=NOTIFY_TIMEOUT)
            if code is not None:
                log.info("gateway.capability_untold peer=%s code=%s", peer, code.value)

        self._soon(tell)

    def _audit(self, event: str, scope: str | None, asked: Asked, code: str) -> None:
        self.bus.audit(self._record(event, scope, asked, code))

    def _record(self, event: str, scope: str | None, asked: Asked, code: str) -> AuditRecord:
        return AuditRecord(
            event=event,
            actor=self._actor,
            peer=scope,
            subject_id=asked.request_id,
            message_type=asked.capability,
            code=code,
        )


def _result(
    asked: Asked,
    status: caps.CapabilityStatus,
    code: ErrorCode | None,
    output: dict[str, Any] | None = None,
) -> CapabilityResult:
    return CapabilityResult(
        request_id=asked.request_id,
        capability=asked.capability,
        status=status,
        code=code.value if code else None,
        output=output,
    )


def _code(value: str) -> ErrorCode:
    try:
        return ErrorCode(value)
    except ValueError:
        return ErrorCode.PROVIDER_FAILED
