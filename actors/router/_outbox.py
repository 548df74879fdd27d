"""What the router writes to the outbox: every message the runtime sends the Agent.

Theory of operation
-------------------
Nothing reaches the Agent but an outbox row, committed by the store in the same transaction as
the step that causes it (a call's receipt with its step, a sub-session's `opened` with its
row). The envelope of each row is built here, from the user's client in the session's
conversation, under the row's id (`_ids`), which is also its wire message id. Once a commit
has written rows, the transport is woken (`wake`); it also polls, so a wake that is
lost only delays the row.

The router's services (the tool pipeline, the interactions, the sub-sessions) and the actor
write through this module alone, so no service builds another's rows or wakes the transport
on its behalf.
"""

from __future__ import annotations

from typing import Any, Final

from pydantic import BaseModel

from lineup import wire
from lineup.actors.kernel import Bus
from lineup.actors.store.messages import OutboxRowIn, ToolCallFacts, ToolCallStepRequest
from lineup.actors.transport.messages import AppServerSession, OutboxWakeEvent
from lineup.facts import tool_calls as machine
from lineup.facts.tool_calls import ToolCallEvent

from . import _ids as ids

__all__ = ["call_rows", "call_step", "envelope_of", "wake"]

WAKE_TIMEOUT: Final = 1.0  # best effort: the transport also polls


async def wake(bus: Bus, *, ahead: bool = False) -> None:
    """Tell the transport the outbox has something new, once rows are committed (best
    effort: it also polls); `ahead`, a row it sends before the backlog (an inventory)."""
    await bus.tell("transport", OutboxWakeEvent(ahead=ahead), timeout=WAKE_TIMEOUT)


def envelope_of(
    session: AppServerSession,
    kind: str,
    payload: BaseModel,
    message_id: str,
    *,
    call_id: str | None = None,
    app_scope: str | None = None,
) -> dict[str, Any]:
    """The wire envelope of one outbox row: from the user's client, in its conversation."""
    return wire.dump(
        wire.envelope(
            kind,
            payload,
            conversation_id=session.conversation_id,
            sender_kind="user",
            sender_id=session.user_id,
            message_id=message_id,
            call_id=call_id,
            app_scope=app_scope,
        )
    )


def call_rows(
    session: AppServerSession,
    call_id: str,
    event: ToolCallEvent,
    result: dict[str, Any] | None,
    code: str | None,
    pointer: str | None = None,
) -> tuple[OutboxRowIn, ...]:
    """The outbox rows a call's `event` writes (`machine.ROWS`): its receipts and its one
    terminal row. `pointer` (a refusal's offending field) goes into the `tool.error` only: the
    outbox row is the message to the Agent, never an audit row."""
    rows = []
    for row in machine.ROWS[event]:
        payload: BaseModel
        if row == "terminal":
            outbox_id, call_kind = ids.terminal_id(call_id), wire.RESULT
            if result is not None:
                payload = wire.ResultPayload(call_id=call_id, result=result)
            else:
                call_kind = wire.TOOL_ERROR
                payload = wire.ToolErrorPayload(
                    call_id=call_id, code=code or event, pointer=_bounded(pointer)
                )
        else:
            outbox_id, call_kind = ids.receipt_id(call_id, row), wire.RECEIPT
            failed = row in ("activation_failed", "activation_cancelled")
            payload = wire.ReceiptPayload(
                call_id=call_id, status=row, code=code if failed else None
            )
        body = envelope_of(session, call_kind, payload, outbox_id, call_id=call_id)
        rows.append(OutboxRowIn(row=row, outbox_id=outbox_id, wire=body))
    return tuple(rows)


def call_step(
    session: AppServerSession,
    call_id: str,
    event: ToolCallEvent,
    *,
    new: ToolCallFacts | None = None,
    instance_id: str | None = None,
    result: dict[str, Any] | None = None,
    code: str | None = None,
    expected_scope: str | None = None,
    pointer: str | None = None,
) -> ToolCallStepRequest:
    """The store request of one step of a call, with the rows it writes."""
    return ToolCallStepRequest(
        call_id=call_id,
        event=event,
        new=new,
        instance_id=instance_id,
        result=result,
        code=code,
        rows=call_rows(session, call_id, event, result, code, pointer),
        expected_app_scope=expected_scope,
    )


def _bounded(pointer: str | None) -> str | None:
    """`pointer` if it fits the wire's bound, else its nearest ancestor that does (whole
    tokens cut from the end: still a pointer, to the field's container)."""
    while pointer is not None and len(pointer) > wire.MAX_POINTER:
        pointer = pointer[: pointer.rindex("/")]
    return pointer
