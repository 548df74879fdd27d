"""Start a real supervised tree inside a test's nursery, and join it as a peer."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import trio
import trio.testing

from lineup.actors.kernel import (
    ActorKind,
    ActorRestarted,
    AuditRecord,
    Bus,
    ErrorCode,
    Identity,
    LineUpError,
    Message,
)
from lineup.actors.store.messages import (
    AuditQueryReply,
    AuditQueryRequest,
    ConversationMessageReply,
    ConversationMessageRequest,
)
from lineup.supervisor import ChildSpec, Supervisor

M = TypeVar("M", bound=Message)
RETRY_WINDOW = 10.0  # how long a caller keeps retrying a restarting peer before failing


async def start_tree(
    nursery: trio.Nursery, specs: list[ChildSpec], data_dir: Path, **kw: Any
) -> Supervisor:
    supervisor = Supervisor(specs, data_dir=data_dir, **kw)
    await nursery.start(supervisor.run)
    return supervisor


async def attach(
    nursery: trio.Nursery,
    supervisor: Supervisor,
    kind: ActorKind = ActorKind.TRANSPORT,
    name: str = "probe",
) -> Bus:
    bus: Bus = await nursery.start(supervisor.attach, Identity(kind, name))
    return bus


async def until_answered(call: Callable[[], Awaitable[M]]) -> M:
    """Retry `call` while its peer restarts, as every real caller does after actor_restarted."""
    with trio.fail_after(RETRY_WINDOW):
        while True:
            try:
                return await call()
            except ActorRestarted:
                continue


async def audit_rows(
    bus: Bus,
    until: Callable[[tuple[AuditRecord, ...]], bool],
    *,
    event_prefix: str | None = None,
    peer: str | None = None,
) -> tuple[AuditRecord, ...]:
    """The store's audit rows once `until(rows)` holds. Rows are written in the background
    (each bus batches them to the store), so this asks again each time the test goes idle."""
    query = AuditQueryRequest(event_prefix=event_prefix, peer=peer, limit=500)
    with trio.fail_after(RETRY_WINDOW):
        while True:
            reply = await bus.request("store", query, expect=AuditQueryReply)
            if until(reply.records):
                return reply.records
            await trio.testing.wait_all_tasks_blocked()


async def stored(reader: Bus, message_id: str) -> bool:
    """Whether the store holds a conversation message with this id."""
    try:
        await reader.request(
            "store",
            ConversationMessageRequest(message_id=message_id),
            expect=ConversationMessageReply,
        )
    except LineUpError as exc:
        if exc.code is not ErrorCode.INVALID_ARGUMENTS:  # the store's "no such message"
            raise
        return False
    return True
