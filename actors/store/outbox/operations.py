"""The outbox (`store.outbox.*`): rows appended for the AppServer, the pending ones listed in
order, and the state changes that move them (and the messages they carry) along.

The contract of every operation (`_rows`). A row is idempotent by `outbox_id`. Its state changes
follow `machine.TRANSITIONS` and are copied to the conversation message the row carries, in the
same savepoint; acknowledging or failing the row that carries a tool call's result settles the
call there too (`tool_calls.operations.settle_terminal`), and the interaction that call
answered (`interactions.operations.settle_for_call`), with audit rows in the name of `actor`,
the channel-bound sender.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Final, cast

from lineup.actors.kernel.errors import ErrorCode, LineUpError
from lineup.facts.outbox import TRANSITIONS, OutboxEvent, OutboxState, next_state

from .._db import Connection
from .._rows import body_cost, int_or_none, json_text, stored_object, within_budget
from .._table import Served, read, write, write_as
from ..interactions.operations import settle_for_call
from ..tool_calls.operations import call_of_terminal, settle_terminal
from .messages import (
    OutboxAckReply,
    OutboxAckRequest,
    OutboxAppendReply,
    OutboxAppendRequest,
    OutboxFailReply,
    OutboxFailRequest,
    OutboxPendingReply,
    OutboxPendingRequest,
    OutboxRetryReply,
    OutboxRetryRequest,
    OutboxRow,
)

__all__ = [
    "HANDLERS",
    "outbox_ack",
    "outbox_append",
    "outbox_fail",
    "outbox_pending",
    "outbox_retry",
]

log = logging.getLogger("lineup.store")


def outbox_append(conn: Connection, req: OutboxAppendRequest, now: float) -> OutboxAppendReply:
    seq = int_or_none(
        conn,
        "INSERT INTO outbox (outbox_id, conversation_id, kind, body, created_at)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT (outbox_id) DO NOTHING RETURNING seq",
        (req.outbox_id, req.conversation_id, req.kind, json_text(req.body), now),
    )
    created = seq is not None
    if seq is None:
        seq = int_or_none(conn, "SELECT seq FROM outbox WHERE outbox_id = ?", (req.outbox_id,))
        assert seq is not None  # the conflict that stopped the insert is this row
    return OutboxAppendReply(outbox_id=req.outbox_id, seq=seq, created=created)


def outbox_pending(conn: Connection, req: OutboxPendingRequest, now: float) -> OutboxPendingReply:
    # Bodies as bytes: one that is not UTF-8 must cost only its own row (skipped below).
    ahead = ", ".join("?" * len(req.ahead))
    order = f"kind NOT IN ({ahead}), seq" if req.ahead else "seq"
    rows: list[Any] = conn.execute(
        "SELECT seq, outbox_id, conversation_id, kind, CAST(body AS BLOB), created_at FROM outbox"
        f" WHERE state = 'pending' AND seq > ? ORDER BY {order} LIMIT ?",
        (req.after_seq, *req.ahead, req.limit),
    ).fetchall()
    pending = []
    for seq, outbox_id, conversation_id, kind, raw, created_at in within_budget(rows, body_cost(4)):
        body = stored_object(raw)
        try:
            if body is None:
                raise ValueError("undecodable body")
            pending.append(
                OutboxRow(
                    seq=seq,
                    outbox_id=outbox_id,
                    conversation_id=conversation_id,
                    kind=kind,
                    body=body,
                    created_at=created_at,
                )
            )
        except ValueError:  # a ValidationError too
            # Poison: never sent, so the transport moves past it; the start-up sweep
            # quarantines it and fails it for good.
            log.warning("store.row_skipped table=outbox seq=%d", seq)
    return OutboxPendingReply(rows=tuple(pending))


# ---------------------------------------------------------------------------------- states


@dataclass(frozen=True, slots=True)
class _Carried:
    """The message an outbox row carries: its id, the app that sent it, that app's id for it."""

    message_id: str | None = None
    app_scope: str | None = None
    client_id: str | None = None


def _outbox_row(conn: Connection, outbox_id: str) -> tuple[OutboxState, _Carried] | None:
    """The row's state and the message it carries, or None for an unknown row."""
    rows = conn.execute(
        "SELECT o.state, m.message_id, m.app_scope, m.client_id FROM outbox AS o"
        " LEFT JOIN messages AS m ON m.outbox_id = o.outbox_id WHERE o.outbox_id = ?",
        (outbox_id,),
    ).fetchall()
    if not rows:
        return None
    state, message_id, app_scope, client_id = rows[0]
    if state not in TRANSITIONS:
        raise LineUpError(ErrorCode.INTERNAL_ERROR, "outbox row in an unknown state")
    assert message_id is None or isinstance(message_id, str)
    assert app_scope is None or isinstance(app_scope, str)
    assert client_id is None or isinstance(client_id, str)
    return cast(OutboxState, state), _Carried(message_id, app_scope, client_id)


def _transition(
    conn: Connection, outbox_id: str, event: OutboxEvent
) -> tuple[OutboxState, OutboxState, _Carried]:
    """`(before, after, carried)` for `event` on a known row. Raises `invalid_arguments` for
    an unknown row or an illegal transition."""
    found = _outbox_row(conn, outbox_id)
    if found is None:
        raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "no such outbox row")
    before, carried = found
    return before, next_state(before, event), carried


def _set_state(
    conn: Connection,
    outbox_id: str,
    message_id: str | None,
    state: OutboxState,
    failed_code: str | None,
    now: float,
) -> None:
    conn.execute(
        "UPDATE outbox SET state = ?, failed_code = ? WHERE outbox_id = ?",
        (state, failed_code, outbox_id),
    )
    if message_id is not None:
        conn.execute(
            "UPDATE messages SET state = ?, failed_code = ?, updated_at = ? WHERE message_id = ?",
            (state, failed_code, now, message_id),
        )


def outbox_ack(
    conn: Connection, req: OutboxAckRequest, now: float, *, actor: str = "store"
) -> OutboxAckReply:
    found = _outbox_row(conn, req.outbox_id)
    if found is None:
        return OutboxAckReply(outbox_id=req.outbox_id, acked=False)
    before, carried = found
    message_id = carried.message_id
    call_id = call_of_terminal(conn, req.outbox_id)
    acked = next_state(before, "ack") != before  # else already sent: the first ack stands
    if acked:
        conn.execute(
            "UPDATE outbox SET state = 'sent', failed_code = NULL, acked_at = ?, remote_id = ?"
            " WHERE outbox_id = ?",
            (now, req.remote_id, req.outbox_id),
        )
        if message_id is not None:
            conn.execute(
                "UPDATE messages SET state = 'sent', failed_code = NULL,"
                " remote_seq = coalesce(?, remote_seq), updated_at = ? WHERE message_id = ?",
                (req.remote_seq, now, message_id),
            )
        # A call's result the AppServer now has: the call is completed in this same
        # transaction, and the interaction it answered with it.
        call = settle_terminal(conn, req.outbox_id, None, now, actor=actor)
        if call is not None:
            settle_for_call(conn, call, None, now, actor=actor)
    return OutboxAckReply(
        outbox_id=req.outbox_id,
        acked=acked,
        message_id=message_id,
        app_scope=carried.app_scope,
        client_id=carried.client_id,
        call_id=call_id,
    )


def outbox_fail(
    conn: Connection, req: OutboxFailRequest, now: float, *, actor: str = "store"
) -> OutboxFailReply:
    before, after, carried = _transition(conn, req.outbox_id, "fail")
    if after != before:
        _set_state(conn, req.outbox_id, carried.message_id, after, req.code, now)
        # A call's result refused for good: the call fails with the refusal's code, here, and
        # the interaction it answered with it.
        call = settle_terminal(conn, req.outbox_id, req.code, now, actor=actor)
        if call is not None:
            settle_for_call(conn, call, req.code, now, actor=actor)
    return OutboxFailReply(
        outbox_id=req.outbox_id,
        message_id=carried.message_id,
        changed=after != before,
        state=after,
        app_scope=carried.app_scope,
        client_id=carried.client_id,
        call_id=call_of_terminal(conn, req.outbox_id),
    )


def outbox_retry(conn: Connection, req: OutboxRetryRequest, now: float) -> OutboxRetryReply:
    before, after, carried = _transition(conn, req.outbox_id, "retry")
    if after != before:
        _set_state(conn, req.outbox_id, carried.message_id, after, None, now)
    return OutboxRetryReply(
        outbox_id=req.outbox_id,
        message_id=carried.message_id,
        changed=after != before,
        state=after,
    )


HANDLERS: Final[tuple[Served, ...]] = (
    write(OutboxAppendRequest, outbox_append),
    read(OutboxPendingRequest, outbox_pending),
    write_as(OutboxAckRequest, outbox_ack),  # may complete a tool call
    write_as(OutboxFailRequest, outbox_fail),  # may fail a tool call
    write(OutboxRetryRequest, outbox_retry),
)
