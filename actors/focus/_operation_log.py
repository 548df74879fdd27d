"""The registry's operations as the store records them (issue 15): one row per operation, moved
by the `Operation` machine (`_operations`), one operation at a time.

Every install and every operation on an app runs under `lock`; an `operation_id` seen before is
answered with the operation it names (`seen`), so a retried request does nothing twice.
"""

from __future__ import annotations

import logging

import trio

from lineup.actors.kernel import ErrorCode
from lineup.actors.store.messages import (
    AppOperationKind,
    AppOperationListReply,
    AppOperationListRequest,
    AppOperationPutReply,
    AppOperationPutRequest,
    AppOperationRow,
)
from lineup.facts.operations import FAILED
from lineup.sdk.protocol import AppOperationInfo

from ._app_book import Installed
from ._operations import Operation
from ._port import Port

__all__ = ["OperationLog", "info_of", "version_of"]

log = logging.getLogger("lineup.focus.registry")


class OperationLog:
    """The registry's operation rows (see the module's docstring)."""

    def __init__(self, port: Port) -> None:
        self._port = port
        self.lock = trio.Lock()  # one operation at a time

    async def put(
        self,
        op: Operation,
        *,
        version: str | None = None,
        from_version: str | None = None,
    ) -> AppOperationRow:
        reply = await self._port.store(
            AppOperationPutRequest(
                operation_id=op.operation_id,
                app_scope=op.app_scope,
                kind=op.kind,
                state=op.state,
                version=version,
                from_version=from_version,
                code=op.code,
            ),
            AppOperationPutReply,
        )
        row: AppOperationRow = reply.operation
        return row

    async def complete(self, op: Operation) -> None:
        await self.put(op.complete())

    async def failed(self, op: Operation, code: ErrorCode) -> AppOperationInfo:
        """End `op` failed with `code`, and return it as the store keeps it: `completed` if
        its change reached the store first (a final operation is never rewritten)."""
        ended = info_of(await self.put(op.fail(code)))
        if ended.state == FAILED:
            log.info("registry.failed kind=%s code=%s", op.kind, code.value)
        else:
            log.warning("registry.completed_unheard kind=%s code=%s", op.kind, code.value)
        return ended

    async def refused(
        self, operation_id: str, scope: str, kind: AppOperationKind, code: ErrorCode
    ) -> AppOperationInfo:
        """An install refused before it named an app: recorded, then failed."""
        op = Operation(operation_id, scope, kind)
        await self.put(op)
        return await self.failed(op, code)

    async def seen(self, operation_id: str) -> AppOperationInfo | None:
        reply = await self._port.store(
            AppOperationListRequest(operation_id=operation_id, limit=1), AppOperationListReply
        )
        return info_of(reply.operations[0]) if reply.operations else None

    async def result(self, operation_id: str) -> AppOperationInfo:
        found = await self.seen(operation_id)
        assert found is not None
        return found

    async def recent(self, limit: int) -> list[AppOperationInfo]:
        """The newest operations first."""
        ops = await self._port.store(AppOperationListRequest(limit=limit), AppOperationListReply)
        return [info_of(op) for op in ops.operations]


def info_of(op: AppOperationRow) -> AppOperationInfo:
    return AppOperationInfo.model_validate(op.model_dump(exclude={"type"}))


def version_of(installed: Installed | None) -> str | None:
    return installed.row.version if installed is not None else None
