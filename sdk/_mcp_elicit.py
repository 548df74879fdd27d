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
does not say which call it is for, so with several calls running it is the app's, unparented.
Its end is the server's answer:

    answered                     accept, the content mapped back (`content_of`)
    the user's cancel            decline (the card's Cancel / Decline)
    expired, or ended otherwise  cancel

A form no interaction can ask is answered `decline`, and an answer that breaks the form's
schema `cancel`; each is reported by its code (`mcp_elicitation_unsupported`,
`answer_invalid`) through the app's diagnostics, which the runtime audits by code alone. A
URL-mode request, which we never advertise, is refused `mcp_elicitation_url_unsupported`.
When the server withdraws its request (or stops), or the call it was asked for ends (LineUp
cancelled it, say), the interaction is cancelled with it. Nothing of the form or its answer is
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
        self._waits: dict[str, list[trio.CancelScope]] = {}  # by parent call

    def call_ended(self, call_id: str) -> None:
        """A call ended (answered, failed or cancelled by LineUp): the questions asked for it
        are withdrawn, and their server hears `cancel` if it still waits."""
        self.calls.pop(call_id, None)
        for scope in self._waits.pop(call_id, []):
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
        parent = next(iter(self.calls.items())) if len(self.calls) == 1 else None
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
        return await self._answer_of(ask, asked.interaction_id, parent[0] if parent else None)

    async def _answer_of(
        self, ask: Ask, interaction_id: str, parent: str | None
    ) -> types.ElicitResult:
        ended = False
        waiting = trio.CancelScope()
        if parent is not None:
            self._waits.setdefault(parent, []).append(waiting)
        try:
            with waiting:
                record = await self._ui.wait(
                    interaction_id, timeout=ELICIT_EXPIRES_IN_MS / 1000 + WAIT_GRACE_S
                )
                ended = True
            if not ended:  # its call ended first
                return types.ElicitResult(action="cancel")
        except trio.TooSlowError:
            return types.ElicitResult(action="cancel")
        except LineUpError as exc:
            log.warning("sdk.mcp_elicitation_lost app=%s code=%s", self._scope, exc.code.value)
            return types.ElicitResult(action="cancel")
        finally:
            if parent is not None and waiting in self._waits.get(parent, []):
                self._waits[parent].remove(waiting)
            if not ended:  # its call ended, the server withdrew it, or no answer in time
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
