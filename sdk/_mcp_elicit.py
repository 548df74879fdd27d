"""An MCP server's `elicitation/create` as a standard interaction the user answers in LineUp.

Theory of operation
-------------------
LineUp's MCP client advertises elicitation in form mode only (`LineUpClientSession`: the SDK
would offer URL mode too as soon as there is a callback), both in the adapter and in the probe
that lists the server's tools, so a server that registers its asking tools only for a client
that can elicit (the reference server does) shows the same tools to both.

`Elicitations` is the adapter's callback. A form becomes the app's own standard interaction
(`_mcp_forms.ask_of` decides which; the runtime owns it: its card in the Shell, its expiry
`ELICIT_EXPIRES_IN_MS`, the first answer winning), asked through the SDK's `Ui` for the
instance of the one call running, tied to that call (`parent_call_id`): over stdio a request
does not say which call it is for, so with several calls running (the Agent's, or its UI's
own) it is the app's, unparented. Either way it is asked for the calls running when it came,
and it ends once every one of them has ended: the question of a call outlives neither it nor,
unparented, the last call that may have asked it (a call started after it does not keep it).
Its end is the server's answer:

    answered                     accept, the content mapped back (`content_of`)
    the user's cancel            decline (the card's Cancel / Decline)
    expired, or ended otherwise  cancel

A form no interaction can ask is answered `decline`, and an answer that breaks the form's
schema `cancel`; each is reported by its code (`mcp_elicitation_unsupported`,
`answer_invalid`) through the app's diagnostics, which the runtime audits by code alone. A
URL-mode request, which we never advertise, is refused `mcp_elicitation_url_unsupported`.
When the server withdraws its request (or stops), or the calls it was asked for end (LineUp
cancelled them, say), the interaction is cancelled with it. Nothing of the form or its answer is
logged.
"""

from __future__ import annotations

import logging
from typing import Final

import mcp_types as types
import trio
from mcp.client.session import ClientRequestContext, ClientSession

from lineup.actors.kernel import ErrorCode, LineUpError

from . import protocol as p
from ._channel import RuntimeChannel
from ._mcp_forms import ELICIT_EXPIRES_IN_MS, Ask, FormUnsupported, ask_of, content_of
from ._ui import Ui

__all__ = ["ELICIT_EXPIRES_IN_MS", "Elicitations", "LineUpClientSession", "decline_all"]

log = logging.getLogger("lineup.sdk.mcp")

WAIT_GRACE_S: Final = 30.0  # past the expiry, for the runtime's word that it expired
CANCEL_TIMEOUT_S: Final = 5.0
_FORM_ONLY: Final = types.ElicitationCapability(form=types.FormElicitationCapability())


class LineUpClientSession(ClientSession):
    """The official client session, advertising elicitation in form mode only (the SDK
    advertises URL mode too whenever an elicitation callback is given)."""

    def _build_capabilities(self, version: str) -> types.ClientCapabilities:
        capabilities = super()._build_capabilities(version)
        if capabilities.elicitation is None:
            return capabilities
        return capabilities.model_copy(update={"elicitation": _FORM_ONLY})


async def decline_all(
    context: ClientRequestContext, params: types.ElicitRequestParams
) -> types.ElicitResult:
    """The probe's callback: it lists tools and asks nothing, so nothing is ever answered."""
    return types.ElicitResult(action="decline")


class Elicitations:
    """The elicitations of one MCP app (the module's docstring). `calls` is kept by the
    adapter: each running call's id and its instance."""

    def __init__(self, host: RuntimeChannel, scope: str, instance_id: str) -> None:
        self._host = host
        self._scope = scope
        self._instance_id = instance_id
        self._ui = Ui(host, instance_id)
        self.title = scope  # the server's own title, once it said it (`initialize`)
        self.calls: dict[str, str] = {}
        self._ui_calls: set[str] = set()  # its UI's own calls running (no instance to tie to)
        # Each question waiting, by its scope: the calls running when it was asked, still running.
        self._waits: dict[trio.CancelScope, set[str]] = {}

    def ui_call_started(self, call_id: str) -> None:
        """A call of the app's UI runs (`miniapp.ui.tool_call`): a question may be its."""
        self._ui_calls.add(_ui_key(call_id))

    def ui_call_ended(self, call_id: str) -> None:
        self._ui_calls.discard(_ui_key(call_id))
        self._ended(_ui_key(call_id))

    def call_ended(self, call_id: str) -> None:
        """A call ended (answered, failed or cancelled by LineUp): each question asked while it
        ran is withdrawn once no other call that ran then still runs, and its server hears
        `cancel` if it still waits."""
        self.calls.pop(call_id, None)
        self._ended(call_id)

    def _running(self) -> set[str]:
        return {*self.calls, *self._ui_calls}

    def _ended(self, key: str) -> None:
        for scope, running in self._waits.items():
            running.discard(key)
            if not running:
                scope.cancel()

    def updated(self, record: p.InteractionRecord) -> None:
        """The runtime's word on one of the app's interactions (an answer, an end)."""
        self._ui._updated(record)

    async def __call__(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        if isinstance(params, types.ElicitRequestURLParams):
            await self._report(ErrorCode.MCP_ELICITATION_URL_UNSUPPORTED)
            code = ErrorCode.MCP_ELICITATION_URL_UNSUPPORTED.value
            return types.ErrorData(code=types.INVALID_REQUEST, message=code)
        try:
            ask = ask_of(self.title, params.message, params.requested_schema)
        except FormUnsupported as exc:
            await self._report(exc.code)
            return types.ElicitResult(action="decline")
        running = self._running()
        lone = len(running) == 1 and not self._ui_calls
        parent = next(iter(self.calls.items())) if lone else None
        try:
            asked = await self._ui.request(
                ask.request,
                instance_id=parent[1] if parent else self._instance_id,
                parent_call_id=parent[0] if parent else None,
                expires_in_ms=ELICIT_EXPIRES_IN_MS,
            )
        except LineUpError as exc:
            log.warning("sdk.mcp_elicitation_not_asked app=%s code=%s", self._scope, exc.code.value)
            return types.ElicitResult(action="cancel")
        return await self._answer_of(ask, asked.interaction_id, running)

    async def _answer_of(
        self, ask: Ask, interaction_id: str, running: set[str]
    ) -> types.ElicitResult:
        """The server's answer, once the interaction ended, or `cancel` once every call of
        `running` (none: it waits for its answer or its expiry) ended first."""
        ended = False
        waiting = trio.CancelScope()
        if running:
            running &= self._running()  # those that ended while it was being asked are gone
            self._waits[waiting] = running
            if not running:
                waiting.cancel()
        try:
            with waiting:
                record = await self._ui.wait(
                    interaction_id, timeout=ELICIT_EXPIRES_IN_MS / 1000 + WAIT_GRACE_S
                )
                ended = True
            if not ended:  # its calls ended first
                return types.ElicitResult(action="cancel")
        except trio.TooSlowError:
            return types.ElicitResult(action="cancel")
        except LineUpError as exc:
            log.warning("sdk.mcp_elicitation_lost app=%s code=%s", self._scope, exc.code.value)
            return types.ElicitResult(action="cancel")
        finally:
            self._waits.pop(waiting, None)
            if not ended:  # its calls ended, the server withdrew it, or no answer in time
                await self._withdraw(interaction_id)
        log.info("sdk.mcp_elicitation_ended app=%s state=%s", self._scope, record.state)
        if record.result is not None:
            try:
                content = content_of(ask, record.result)
            except FormUnsupported as exc:
                await self._report(exc.code)
                return types.ElicitResult(action="cancel")
            if content is None:
                return types.ElicitResult(action="decline")
            return types.ElicitResult(action="accept", content=content)
        by_user = record.terminal_code == ErrorCode.CANCELLED_BY_USER.value
        if record.state == "cancelled" and by_user:
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="cancel")

    async def _withdraw(self, interaction_id: str) -> None:
        with trio.CancelScope(shield=True), trio.move_on_after(CANCEL_TIMEOUT_S):
            try:
                await self._ui.cancel(interaction_id)
            except LineUpError as exc:
                log.info("sdk.mcp_elicitation_not_withdrawn code=%s", exc.code.value)

    async def _report(self, code: ErrorCode) -> None:
        """Audited by its code alone (the app's diagnostics): the form and the answer never."""
        log.warning("sdk.mcp_elicitation_refused app=%s code=%s", self._scope, code.value)
        report = p.DiagnosticsReportRequest(
            instance_id=self._instance_id, health="ok", error=p.ErrorReport(code=code.value)
        )
        try:
            await self._host.call("focus", report, p.CommandReceipt)
        except LineUpError as exc:
            log.info("sdk.mcp_elicitation_not_reported code=%s", exc.code.value)


def _ui_key(call_id: str) -> str:
    # A UI call's id beside the Agent's calls' ids, which it could equal.
    return f"ui:{call_id}"
