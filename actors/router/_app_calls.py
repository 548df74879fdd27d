"""The MiniApp's side of a tool call: taking it, its progress, its outcome, and its list.

Theory of operation
-------------------
A call handed to an instance is its app's to `take`; the app then reports progress and
`submit`s its result (checked against the tool's output schema), `fail`s or `cancel`s it. Each
is one step of the call (`_tools`). Only the call's own app may do any of it: the call's scope
is the channel's, never a field the app fills in; another app's call (or the runtime's own, an
interaction's) is refused `app_scope_mismatch` and audited, and a decided one
`call_already_final`. What the router knows of a call is remembered (`ToolCalls.known`), so an
app's steady reports cost no store read.

Progress is coalesced (`_progress`): per call, the latest report wins and at most
PROGRESS_RATE a second reach the outbox; an outcome drops what is held.
"""

from __future__ import annotations

import logging
import time

import trio

from lineup import wire
from lineup.actors.kernel import AuditRecord, ErrorCode, Identity, LineUpError, app_scope_of
from lineup.actors.store.messages import (
    ToolCallGetReply,
    ToolCallGetRequest,
    ToolCallListReply,
    ToolCallListRequest,
    ToolCallProgressReply,
    ToolCallProgressRequest,
)
from lineup.facts.scopes import INTERACTION
from lineup.facts.tool_calls import ToolCallEvent
from lineup.sdk import protocol as sdk
from lineup.sdk.manifest import split_tool_id

from . import _ids as ids
from . import _outbox as outbox
from ._interactions import APP_CLOSED
from ._progress import SEND_NOW
from ._tools import Known, ToolCalls

__all__ = ["AppCalls"]

log = logging.getLogger("lineup.router.tools")


class AppCalls:
    """What a MiniApp does with the calls handed to it (the module's docstring)."""

    def __init__(self, calls: ToolCalls) -> None:
        self.calls = calls
        self.bus = calls.bus
        self.me = calls.me

    async def _own_call(self, sender: Identity, call_id: str, tag: str) -> Known:
        """What the router knows of `call_id`, if it is the sender's and not decided. From
        memory when this router has seen the call, else from the store (once)."""
        scope = app_scope_of(sender)
        known = self.calls.known.get(call_id)
        if known is None:
            reply = await self.calls.store(ToolCallGetRequest(call_id=call_id), ToolCallGetReply)
            if reply.call is None:
                raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, call_id)
            self.calls.remember(reply.call)
            known = self.calls.known[call_id]
        if known.app_scope != scope or known.app_scope == INTERACTION:
            self.bus.audit(AuditRecord.scope_denied(self.me.name, sender.name, tag, call_id))
            raise LineUpError(ErrorCode.APP_SCOPE_MISMATCH, call_id)
        if known.decided:
            raise LineUpError(ErrorCode.CALL_ALREADY_FINAL, call_id)
        return known

    async def progress(self, sender: Identity, msg: sdk.ToolProgressRequest) -> sdk.CommandReceipt:
        """Take a progress report: written at once if its call's window is open, else held
        (the latest wins) and written when the window ends. Its receipt means "taken"."""
        known = await self._own_call(sender, msg.call_id, msg.TYPE)
        due = self.calls.progress.offer(msg.call_id, (known, msg), trio.current_time())
        if due == SEND_NOW:
            await self._write_progress(known, msg)
        elif due is not None:
            self.calls.soon(self._flush_progress, msg.call_id, due)
        return sdk.CommandReceipt(id=msg.call_id)

    async def _flush_progress(self, call_id: str, due: float) -> None:
        """At the end of the call's window, write the report it held (if it still holds one:
        an outcome drops it)."""
        await trio.sleep_until(due)
        held = self.calls.progress.take(call_id, trio.current_time())
        if held is None:
            return
        try:
            await self._write_progress(*held)
        except LineUpError as exc:  # e.g. the call became final meanwhile
            log.info("router.progress_not_written code=%s", exc.code.value)

    async def _write_progress(self, known: Known, msg: sdk.ToolProgressRequest) -> None:
        session = await self.calls.session()
        outbox_id = ids.progress_id(msg.call_id, time.time_ns())
        body = outbox.envelope_of(
            session,
            wire.PROGRESS,
            wire.ProgressPayload(call_id=msg.call_id, progress=msg.progress),
            outbox_id,
            call_id=msg.call_id,
        )
        await self.calls.store(
            ToolCallProgressRequest(
                call_id=msg.call_id,
                progress=msg.progress,
                outbox_id=outbox_id,
                wire=body,
                expected_app_scope=known.app_scope,
                expected_instance_id=known.instance_id or "",
            ),
            ToolCallProgressReply,
        )
        await outbox.wake(self.bus)

    async def complete(self, sender: Identity, msg: sdk.ToolCompleteRequest) -> sdk.CommandReceipt:
        known = await self._own_call(sender, msg.call_id, msg.TYPE)
        inventory = await self.calls.inventory.get()
        descriptor = inventory.tool(known.tool)
        if descriptor is None:
            raise LineUpError(ErrorCode.APP_DISABLED, known.tool)
        if descriptor.output_violations(msg.result):
            self.bus.audit(
                AuditRecord(
                    event="router.tool_output_refused",
                    actor=self.me.name,
                    peer=sender.name,
                    code=ErrorCode.TOOL_OUTPUT_INVALID.value,
                    subject_id=msg.call_id,
                )
            )
            raise LineUpError(ErrorCode.TOOL_OUTPUT_INVALID, known.tool)
        # `submitted`, not `completed`: the call is completed once the AppServer acknowledged
        # the result's outbox row (the store does that in the ack's transaction).
        await self.calls.step(
            msg.call_id, "submit", result=msg.result, expected_scope=known.app_scope
        )
        return sdk.CommandReceipt(id=msg.call_id)

    async def fail(self, sender: Identity, msg: sdk.ToolFailRequest) -> sdk.CommandReceipt:
        known = await self._own_call(sender, msg.call_id, msg.TYPE)
        await self._end(known, msg.call_id, "fail", msg.code[:100])
        return sdk.CommandReceipt(id=msg.call_id)

    async def cancel(self, sender: Identity, msg: sdk.ToolCancelRequest) -> sdk.CommandReceipt:
        known = await self._own_call(sender, msg.call_id, msg.TYPE)
        await self._end(known, msg.call_id, "cancel", msg.reason)
        return sdk.CommandReceipt(id=msg.call_id)

    async def _end(self, known: Known, call_id: str, event: ToolCallEvent, code: str) -> None:
        """The app ends its call. Once the call's instance has ended (the store refuses the
        app's ending then), the end decides: the call is closed `app_closed`, as the
        instance's end closes it, and the app is told `call_already_final`. An app whose
        handler failed because the user closed its instance meanwhile never reports that
        failure as the call's outcome."""
        try:
            await self.calls.step(call_id, event, code=code, expected_scope=known.app_scope)
        except LineUpError as exc:
            if exc.code is not ErrorCode.APP_INSTANCE_NOT_FOUND:
                raise
            await self.calls.end(call_id, "close", APP_CLOSED)
            raise LineUpError(ErrorCode.CALL_ALREADY_FINAL, call_id) from None

    async def accept_call(self, sender: Identity, msg: sdk.ToolAcceptRequest) -> sdk.CommandReceipt:
        """The app takes a call handed to it: `running` from now on (a repeat changes nothing).
        Refused (and so not run) when decided, not the app's, or not handed over (held)."""
        known = await self._own_call(sender, msg.call_id, msg.TYPE)
        try:
            reply = await self.calls.step(msg.call_id, "take", expected_scope=known.app_scope)
        except LineUpError as exc:
            if exc.code is ErrorCode.INVALID_ARGUMENTS:
                raise LineUpError(
                    ErrorCode.INVALID_ARGUMENTS, "the call was not handed over"
                ) from exc
            raise
        return sdk.CommandReceipt(id=msg.call_id, changed=reply.changed)

    async def pending(self, sender: Identity) -> sdk.ToolPendingReply:
        """The app's calls handed over and not decided, oldest first: read only."""
        scope = app_scope_of(sender)
        reply = await self.calls.store(
            ToolCallListRequest(app_scope=scope, undecided_only=True, limit=500), ToolCallListReply
        )
        calls = tuple(
            sdk.ToolCallEvent(
                call_id=c.call_id,
                tool=split_tool_id(c.tool)[1],  # the method the app declared
                instance_id=c.instance_id or "",
                input=c.input,
            )
            for c in reply.calls
            if c.instance_id is not None and c.state in ("waiting_for_app", "running")
        )
        # No grant here: an app may list as often as it likes, and a grant per listing would
        # be a budget it could mint. Its calls were granted when it was told of them; the ones
        # it finds here at its start are paid from its burst (`MINIAPP_BURST`).
        return sdk.ToolPendingReply(calls=calls)
