"""The Shell's side of the capability gateway (issue 14): the runtime's own permission prompt, the
host providers the Shell runs, and the permissions page.

The gateway decides; it only *tells* the hostbridge (`hostbridge.capability.prompt` / `.run` /
`.ended` / `.grants.changed`). `CapabilityMirror` keeps what is pending (no I/O: the actor feeds
it), so a Shell that connects is shown the prompts and runs at once; the gateway is asked
(`gateway.ui.capability.pending`) when the hostbridge starts, until it answers, and at every
Shell greeting, and what it says replaces the mirror. The user's answers come back from the
Shell (`capability.answer`, `capability.done`, `grants.list`, `grant.set`) and go to the gateway
as `gateway.ui.*` requests; a refusal (`prompt_not_found`, …) is a notice with its code to the
Shell that sent the frame, and an audit row by type and code within the per-offender bound
(`Bus.audit_refusal`, offender `user`); an answer or a provider's end is audited once the
gateway took it (so as many as there were prompts and runs), a refused one by its refusal
alone. A picked file reaches the gateway
with its base name only (no path, whatever the browser said), within an artifact's size.

Audit rows and logs hold ids, the capability, the decision and the code: never the purpose, a
notification's text, a file's name or its bytes.
"""

from __future__ import annotations

import base64
import binascii
import logging
import re
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable
from pathlib import PurePosixPath
from typing import Final, TypeVar

import trio
from pydantic import ValidationError

from lineup.actors.gateway.messages import (
    CapabilityPendingReply,
    CapabilityPendingRequest,
    GrantSetRequest,
    GrantsListReply,
    GrantsListRequest,
    PickedFile,
    PromptAnswerRequest,
    ProviderDoneRequest,
    UiAccepted,
)
from lineup.actors.kernel import Bus, LineUpError
from lineup.sdk.protocol import ARTIFACT_MEDIA_TYPES, BUNDLE_MEDIA_TYPE, MAX_ARTIFACT_BYTES

from ._artifacts import ticket
from ._audit import user_record
from ._refusals import RefusalLog
from ._server import Reply, ShellHub
from .messages import CapabilityPromptView, ProviderRunView
from .shell_protocol import (
    MAX_ITEMS_FRAME_BYTES,
    CapabilityAnswerFrame,
    CapabilityDoneFrame,
    CapabilityFrame,
    GrantSetFrame,
    GrantsListFrame,
    PickedFileFrame,
    ShellCapabilityEnded,
    ShellCapabilityPrompt,
    ShellCapabilityRun,
    ShellGrants,
    ShellNotice,
    ShellOutbound,
)

__all__ = [
    "ANSWER_REFUSED",
    "DONE_REFUSED",
    "GRANT_REFUSED",
    "MAX_PENDING",
    "CapabilityDesk",
    "CapabilityMirror",
    "base_name",
    "picked_file",
]

log = logging.getLogger("lineup.hostbridge")

ASK_TIMEOUT: Final = 5.0
ANSWER_TIMEOUT: Final = ASK_TIMEOUT * 3
PENDING_BACKOFF_MIN: Final = 0.25  # seconds before asking a gateway that did not answer again
PENDING_BACKOFF_MAX: Final = 5.0
MAX_PENDING: Final = 64  # prompts (and runs) held; the gateway bounds its own
MAX_ENDED: Final = 1000  # ended ids remembered, so a late view of one never reopens it
ENDED_GRACE_S: Final = 5.0  # a view past its expiry by this much is gone, told or not
ANSWER_REFUSED: Final = "hostbridge.capability_answer_refused"
DONE_REFUSED: Final = "hostbridge.capability_done_refused"
GRANT_REFUSED: Final = "hostbridge.grant_refused"
MAX_NAME: Final = 128  # lineup.sdk.protocol ArtifactInfo.name
_CONTROL: Final = re.compile(r"[\x00-\x1f\x7f]")
# A browser names a file's type by its extension, and not every one of ours (".md" is ""):
# the extension then says which artifact media type it is, if any.
_BY_EXTENSION: Final = {
    ".png": "image/png",
    ".json": "application/json",
    ".txt": "text/plain",
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".csv": "text/csv",
    ".lineup": BUNDLE_MEDIA_TYPE,  # a signed app bundle, for the App Registry's install
}


V = TypeVar("V", CapabilityPromptView, ProviderRunView)


class CapabilityMirror:
    """The prompts and provider runs pending, by id, as the gateway told or listed them."""

    def __init__(self) -> None:
        self._prompts: OrderedDict[str, CapabilityPromptView] = OrderedDict()
        self._runs: OrderedDict[str, ProviderRunView] = OrderedDict()
        self._ended: OrderedDict[str, None] = OrderedDict()

    def prompt(self, view: CapabilityPromptView) -> bool:
        """Hold a prompt; False if it already ended (a late view)."""
        return self._hold(self._prompts, view.prompt_id, view)

    def run(self, view: ProviderRunView) -> bool:
        return self._hold(self._runs, view.run_id, view)

    def ids(self) -> set[str]:
        """The ids of the prompts and runs held."""
        return {*self._prompts, *self._runs}

    def _hold(self, held: OrderedDict[str, V], key: str, view: V) -> bool:
        if key in self._ended:
            return False
        held[key] = view
        held.move_to_end(key)
        while len(held) > MAX_PENDING:
            held.popitem(last=False)
        return True

    def end(self, key: str) -> None:
        self._prompts.pop(key, None)
        self._runs.pop(key, None)
        self._ended[key] = None
        self._ended.move_to_end(key)
        while len(self._ended) > MAX_ENDED:
            self._ended.popitem(last=False)

    def replace(
        self, prompts: Iterable[CapabilityPromptView], runs: Iterable[ProviderRunView]
    ) -> None:
        """What the gateway says is pending now, in place of what was held."""
        self._prompts.clear()
        self._runs.clear()
        for prompt in prompts:
            self.prompt(prompt)
        for run in runs:
            self.run(run)

    def pending(self, now: float) -> tuple[list[CapabilityPromptView], list[ProviderRunView]]:
        """What is pending, but what expired a while ago (its `ended` may have been lost)."""
        for held in (self._prompts, self._runs):
            for key in [k for k, v in held.items() if v.expires_at + ENDED_GRACE_S < now]:
                del held[key]
        return list(self._prompts.values()), list(self._runs.values())

    def get_prompt(self, prompt_id: str) -> CapabilityPromptView | None:
        return self._prompts.get(prompt_id)

    def get_run(self, run_id: str) -> ProviderRunView | None:
        return self._runs.get(run_id)


def prompt_frame(view: CapabilityPromptView) -> ShellCapabilityPrompt:
    return ShellCapabilityPrompt(prompt=view.model_dump(mode="json", exclude={"type"}))


def run_frame(view: ProviderRunView, token: str) -> ShellCapabilityRun:
    """The run as the Shell gets it: an `artifact.save` artifact with the ticket that downloads
    it (`/artifacts/<id>?ticket=…&download=1`), never the token."""
    run = view.model_dump(mode="json", exclude={"type"})
    if view.artifact is not None:
        run["artifact"] = {
            **view.artifact.model_dump(mode="json", exclude={"type"}),
            "ticket": ticket(token, view.artifact.artifact_id),
        }
    return ShellCapabilityRun(run=run)


def grants_frames(reply: GrantsListReply) -> ShellGrants:
    grants = tuple(g.model_dump(mode="json", exclude={"type"}) for g in reply.grants)
    return ShellGrants(grants=grants[: MAX_ITEMS_FRAME_BYTES // 512])


def base_name(name: str) -> str:
    """The last segment of `name` (either separator), without control characters, within an
    artifact name's length; "file" if nothing is left."""
    last = re.split(r"[\\/]", name)[-1]
    cleaned = _CONTROL.sub("", last).strip()
    if cleaned in ("", ".", ".."):
        return "file"
    if len(cleaned) > MAX_NAME:
        suffix = PurePosixPath(cleaned).suffix[:16]
        cleaned = cleaned[: MAX_NAME - len(suffix)] + suffix
    return cleaned


def picked_file(frame: PickedFileFrame) -> PickedFile | None:
    """The file as the gateway takes it (base name, a media type, base64 within an artifact's
    bytes); None if it cannot be one."""
    try:
        data = base64.b64decode(frame.content_b64, validate=True)
    except (binascii.Error, ValueError):
        return None
    if len(data) > MAX_ARTIFACT_BYTES:
        return None
    name = base_name(frame.name)
    media_type = frame.media_type.split(";")[0].strip().lower()
    if media_type not in ARTIFACT_MEDIA_TYPES:
        media_type = _BY_EXTENSION.get(PurePosixPath(name).suffix.lower(), media_type)
    if not media_type:
        media_type = "application/octet-stream"  # the gateway refuses it: not an artifact's
    try:
        return PickedFile(name=name, media_type=media_type[:100], content_b64=frame.content_b64)
    except ValidationError:
        return None


Spawn = Callable[[Callable[[], Awaitable[None]]], None]


class CapabilityDesk:
    """The actor's capability side: the mirror, its frames to the Shells, and the server's
    `CapabilityHost` (the Shell's frames, to the gateway)."""

    def __init__(self, bus: Bus, hub: ShellHub) -> None:
        self._bus = bus
        self._hub = hub
        self.mirror = CapabilityMirror()
        self._token = ""
        self._spawn: Spawn | None = None
        self._listed = False
        self._relisting = False
        self._quiet = RefusalLog(log)

    def start(self, token: str, spawn: Spawn) -> None:
        self._token = token
        self._spawn = spawn
        spawn(self._pending_until_answered)

    # ------------------------------------------------------------------ gateway → Shells

    def prompt(self, view: CapabilityPromptView) -> None:
        if self.mirror.prompt(view):
            self._broadcast(prompt_frame(view))

    def run(self, view: ProviderRunView) -> None:
        if self.mirror.run(view):
            self._broadcast(run_frame(view, self._token))

    def ended(self, key: str, outcome: str) -> None:
        self.mirror.end(key)
        try:
            self._broadcast(ShellCapabilityEnded(id=key, outcome=outcome[:64] or "ended"))
        except ValidationError:
            log.warning("hostbridge.frame_unbuildable type=shell.capability.ended")

    def gateway_started(self) -> None:
        """A gateway that restarted forgot what a killed one told of: list what is pending
        again, take down the rest on every Shell, and show what is new."""
        if self._spawn is None:
            return

        async def relist() -> None:
            before = self.mirror.ids()
            if not await self._ask_pending():
                return
            for key in sorted(before - self.mirror.ids()):
                self.ended(key, "gateway_restarted")
            for frame in self.frames(_now()):
                self._broadcast(frame)

        self._spawn(relist)

    def grants_changed(self) -> None:
        """A grant changed: every Shell gets the list again (its permissions page, if open)."""
        if self._spawn is None or not len(self._hub):
            return

        async def relist() -> None:
            reply = await self._grants()
            if reply is not None:
                self._hub.broadcast(grants_frames(reply))

        self._spawn(relist)

    def _broadcast(self, frame: ShellOutbound) -> None:
        if len(self._hub):
            self._hub.broadcast(frame)

    async def _ask_pending(self) -> bool:
        try:
            reply = await self._bus.request(
                "gateway",
                CapabilityPendingRequest(),
                expect=CapabilityPendingReply,
                timeout=ASK_TIMEOUT,
                retry=True,
            )
        except LineUpError as exc:
            self._quiet.refused("hostbridge.capabilities_unlisted", code=exc.code.value)
            return False
        self.mirror.replace(reply.prompts, reply.runs)
        self._listed = True
        return True

    async def _pending_until_answered(self) -> None:
        """At start: ask until the gateway answers (it may start after us), then show the
        Shells already connected what it said."""
        delay = PENDING_BACKOFF_MIN
        while not self._listed:
            if await self._ask_pending():
                for frame in self.frames(_now()):
                    self._broadcast(frame)
                return
            await trio.sleep(delay)
            delay = min(delay * 2, PENDING_BACKOFF_MAX)

    def frames(self, now: float) -> list[ShellOutbound]:
        prompts, runs = self.mirror.pending(now)
        return [
            *(prompt_frame(p) for p in prompts),
            *(run_frame(r, self._token) for r in runs),
        ]

    async def greeting(self) -> list[ShellOutbound]:
        """A connecting Shell's prompts and runs: asked of the gateway (before the first
        answer, the start task is asking already), else what the mirror holds."""
        if self._listed:
            await self._ask_pending()
        return self.frames(_now())

    # ------------------------------------------------------------------ Shell → gateway

    async def frame(self, frame: CapabilityFrame, reply: Reply) -> None:
        if isinstance(frame, CapabilityAnswerFrame):
            await self._answer(frame, reply)
        elif isinstance(frame, CapabilityDoneFrame):
            await self._done(frame, reply)
        elif isinstance(frame, GrantsListFrame):
            listed = await self._grants(reply)
            if listed is not None:
                reply(grants_frames(listed))
        else:
            await self._set(frame, reply)

    async def _answer(self, frame: CapabilityAnswerFrame, reply: Reply) -> None:
        body = PromptAnswerRequest(prompt_id=frame.prompt_id, decision=frame.decision)
        if await self._ask_gateway(body, frame.type, ANSWER_REFUSED, frame.prompt_id, reply):
            self._audit("ui.capability.answer", frame.type, frame.decision, frame.prompt_id)

    async def _done(self, frame: CapabilityDoneFrame, reply: Reply) -> None:
        picked: PickedFile | None = None
        if frame.file is not None:
            picked = picked_file(frame.file)
            if picked is None:
                self._refuse(frame.type, DONE_REFUSED, "artifact_invalid", frame.run_id, reply)
                return
        body = ProviderDoneRequest(run_id=frame.run_id, status=frame.status, file=picked)
        if await self._ask_gateway(body, frame.type, DONE_REFUSED, frame.run_id, reply):
            self._audit("ui.capability.done", frame.type, frame.status, frame.run_id)

    async def _ask_gateway(
        self,
        body: PromptAnswerRequest | ProviderDoneRequest,
        message_type: str,
        event: str,
        about: str,
        reply: Reply,
    ) -> bool:
        """Whether the gateway took it (a refusal: audited within the per-offender bound, and
        a notice to this Shell)."""
        try:
            await self._bus.request(
                "gateway",
                body,
                expect=UiAccepted,
                timeout=ANSWER_TIMEOUT,
                retry=True,  # the first answer wins: a repeat is refused, never taken twice
            )
        except LineUpError as exc:
            self._refuse(message_type, event, exc.code.value, about, reply)
            return False
        return True

    async def _grants(self, reply: Reply | None = None) -> GrantsListReply | None:
        try:
            listed = await self._bus.request(
                "gateway",
                GrantsListRequest(),
                expect=GrantsListReply,
                timeout=ASK_TIMEOUT,
                retry=True,
            )
        except LineUpError as exc:
            if reply is not None:
                self._refuse("grants.list", GRANT_REFUSED, exc.code.value, None, reply)
            return None
        return listed

    async def _set(self, frame: GrantSetFrame, reply: Reply) -> None:
        about = f"{frame.app_scope}:{frame.capability}"
        self._audit("ui.grant.set", frame.type, frame.policy, about)
        try:
            listed = await self._bus.request(
                "gateway",
                GrantSetRequest(
                    app_scope=frame.app_scope, capability=frame.capability, policy=frame.policy
                ),
                expect=GrantsListReply,
                timeout=ANSWER_TIMEOUT,
                retry=True,  # setting a policy twice sets it once
            )
        except LineUpError as exc:
            self._refuse(frame.type, GRANT_REFUSED, exc.code.value, about, reply)
            return
        reply(grants_frames(listed))

    # ------------------------------------------------------------------ audit

    def _audit(self, event: str, message_type: str, code: str, subject_id: str) -> None:
        self._bus.audit(user_record(event, message_type, code=code, subject_id=subject_id))

    def _refuse(
        self, message_type: str, event: str, code: str, about: str | None, reply: Reply
    ) -> None:
        self._bus.audit_refusal(user_record(event, message_type, code=code, subject_id=about))
        reply(ShellNotice(level="error", text="That could not be done.", code=code))


def _now() -> float:
    return time.time()
