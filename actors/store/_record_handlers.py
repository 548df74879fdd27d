"""The store actor's handlers for the runtime's records: tool calls, instances and the focus
stack, session data, the registry and the inventory revision.

A mixin of `StoreActor` (the kernel collects `@handles` methods along the MRO), kept apart so that
each module stays readable. Every handler is the same thin shell as in `_actor`: one operation,
awaited through the committer, answered only after its transaction committed. Operations that
write an audit row get the channel-bound sender's name as the row's `actor`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol, TypeVar

from lineup.actors.kernel.actor import handles
from lineup.actors.kernel.bus import Envelope

from ._committer import Committer
from ._db import Connection
from .apps import operations as d
from .instances import operations as i
from .messages import (
    AppEnabledSetReply,
    AppEnabledSetRequest,
    AppRegistryListReply,
    AppRegistryListRequest,
    AppRegistryPutReply,
    AppRegistryPutRequest,
    FocusStackGetReply,
    FocusStackGetRequest,
    FocusStackSetReply,
    FocusStackSetRequest,
    InstanceCommitReply,
    InstanceCommitRequest,
    InstanceListReply,
    InstanceListRequest,
    InstanceRecoverReply,
    InstanceRecoverRequest,
    InstanceTransitionReply,
    InstanceTransitionRequest,
    InstanceUpsertReply,
    InstanceUpsertRequest,
    InventoryRevisionBumpReply,
    InventoryRevisionBumpRequest,
    InventoryRevisionGetReply,
    InventoryRevisionGetRequest,
    SessionDataGetReply,
    SessionDataGetRequest,
    SessionDataReplaceReply,
    SessionDataReplaceRequest,
    ToolCallGetReply,
    ToolCallGetRequest,
    ToolCallListReply,
    ToolCallListRequest,
    ToolCallProgressReply,
    ToolCallProgressRequest,
    ToolCallStepReply,
    ToolCallStepRequest,
)
from .tool_calls import operations as t

__all__ = ["RecordHandlers"]

Q = TypeVar("Q")
R = TypeVar("R")
Q_contra = TypeVar("Q_contra", contravariant=True)
R_co = TypeVar("R_co", covariant=True)


class AuditedOperation(Protocol[Q_contra, R_co]):
    """An operation that writes audit rows in the name of `actor`."""

    def __call__(self, conn: Connection, req: Q_contra, now: float, /, *, actor: str) -> R_co: ...


class RecordHandlers:
    _committer: Committer  # set by StoreActor.__init__

    async def _read(self, op: Callable[[Connection, Q, float], R], msg: Q) -> R:
        return await self._committer.submit(lambda conn: op(conn, msg, time.time()), write=False)

    async def _write(self, op: Callable[[Connection, Q, float], R], msg: Q) -> R:
        return await self._committer.submit(lambda conn: op(conn, msg, time.time()), write=True)

    async def _write_as(self, op: AuditedOperation[Q, R], msg: Q, env: Envelope) -> R:
        actor = env.sender.name
        return await self._committer.submit(
            lambda conn: op(conn, msg, time.time(), actor=actor), write=True
        )

    # ------------------------------------------------------------------ tool calls

    @handles(ToolCallStepRequest)
    async def on_tool_call_step(self, msg: ToolCallStepRequest, env: Envelope) -> ToolCallStepReply:
        return await self._write_as(t.tool_call_step, msg, env)

    @handles(ToolCallProgressRequest)
    async def on_tool_call_progress(
        self, msg: ToolCallProgressRequest, env: Envelope
    ) -> ToolCallProgressReply:
        return await self._write_as(t.tool_call_progress, msg, env)

    @handles(ToolCallGetRequest)
    async def on_tool_call_get(self, msg: ToolCallGetRequest, env: Envelope) -> ToolCallGetReply:
        return await self._read(t.tool_call_get, msg)

    @handles(ToolCallListRequest)
    async def on_tool_call_list(self, msg: ToolCallListRequest, env: Envelope) -> ToolCallListReply:
        return await self._read(t.tool_call_list, msg)

    # ------------------------------------------------------------------ instances, focus stack

    @handles(InstanceUpsertRequest)
    async def on_instance_put(
        self, msg: InstanceUpsertRequest, env: Envelope
    ) -> InstanceUpsertReply:
        return await self._write_as(i.instance_put, msg, env)

    @handles(InstanceTransitionRequest)
    async def on_instance_transition(
        self, msg: InstanceTransitionRequest, env: Envelope
    ) -> InstanceTransitionReply:
        return await self._write_as(i.instance_transition, msg, env)

    @handles(InstanceCommitRequest)
    async def on_instance_commit(
        self, msg: InstanceCommitRequest, env: Envelope
    ) -> InstanceCommitReply:
        return await self._write_as(i.instance_commit, msg, env)

    @handles(InstanceListRequest)
    async def on_instance_list(self, msg: InstanceListRequest, env: Envelope) -> InstanceListReply:
        return await self._read(i.instance_list, msg)

    @handles(InstanceRecoverRequest)
    async def on_instance_recover(
        self, msg: InstanceRecoverRequest, env: Envelope
    ) -> InstanceRecoverReply:
        return await self._write_as(i.instance_recover, msg, env)

    @handles(FocusStackSetRequest)
    async def on_focus_stack_set(
        self, msg: FocusStackSetRequest, env: Envelope
    ) -> FocusStackSetReply:
        return await self._write(i.focus_stack_set, msg)

    @handles(FocusStackGetRequest)
    async def on_focus_stack_get(
        self, msg: FocusStackGetRequest, env: Envelope
    ) -> FocusStackGetReply:
        return await self._read(i.focus_stack_get, msg)

    # ------------------------------------------------------------------ session data

    @handles(SessionDataGetRequest)
    async def on_session_data_get(
        self, msg: SessionDataGetRequest, env: Envelope
    ) -> SessionDataGetReply:
        return await self._read(d.session_data_get, msg)

    @handles(SessionDataReplaceRequest)
    async def on_session_data_replace(
        self, msg: SessionDataReplaceRequest, env: Envelope
    ) -> SessionDataReplaceReply:
        return await self._write(d.session_data_replace, msg)

    # ------------------------------------------------------------------ registry, inventory

    @handles(AppRegistryPutRequest)
    async def on_registry_put(
        self, msg: AppRegistryPutRequest, env: Envelope
    ) -> AppRegistryPutReply:
        return await self._write_as(d.app_registry_put, msg, env)

    @handles(AppEnabledSetRequest)
    async def on_app_enabled_set(
        self, msg: AppEnabledSetRequest, env: Envelope
    ) -> AppEnabledSetReply:
        return await self._write_as(d.app_enabled_set, msg, env)

    @handles(AppRegistryListRequest)
    async def on_registry_list(
        self, msg: AppRegistryListRequest, env: Envelope
    ) -> AppRegistryListReply:
        return await self._read(d.app_registry_list, msg)

    @handles(InventoryRevisionBumpRequest)
    async def on_inventory_bump(
        self, msg: InventoryRevisionBumpRequest, env: Envelope
    ) -> InventoryRevisionBumpReply:
        return await self._write(d.inventory_revision_bump, msg)

    @handles(InventoryRevisionGetRequest)
    async def on_inventory_get(
        self, msg: InventoryRevisionGetRequest, env: Envelope
    ) -> InventoryRevisionGetReply:
        return await self._read(d.inventory_revision_get, msg)
