"""`Ui`: the app's view (rendered whole, items put in bounded batches) and the standard
interactions it asks the user (seed 003 §3.4), with the one piece of state an SDK service keeps:
the answered interactions `wait` remembers, and the waiters the host wakes as the runtime's
word arrives.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import Any, Final

import trio
from pydantic import BaseModel

from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.facts.interactions import FINAL

from . import protocol as p
from ._channel import RuntimeChannel

__all__ = ["MAX_KEPT_RECORDS", "Ui"]

MAX_KEPT_RECORDS: Final = 256  # answered interactions the app's `Ui.wait` remembers


class Ui:
    """The app's view, and the standard interactions it asks the user (seed 003 §3.4)."""

    def __init__(self, host: RuntimeChannel, instance_id: str = "") -> None:
        self._host = host
        self._instance_id = instance_id
        # Waiters for an interaction's answer, by id: resolved by the host as the runtime's
        # word arrives, not through the event queue (a hook may be the one waiting).
        self._waiters: dict[str, list[trio.Event]] = {}
        self._records: dict[str, p.InteractionRecord] = {}

    async def request(
        self,
        request: BaseModel | Mapping[str, Any],
        *,
        instance_id: str | None = None,
        parent_call_id: str | None = None,
        presentation: p.Presentation = "default",
        expires_in_ms: int | None = None,
        request_id: str | None = None,
    ) -> p.InteractionRecord:
        """Ask the user a standard interaction (`lineup.sdk.interactions`' requests: notice,
        choice, confirm, input), shown in this app's own container. The runtime injects the
        owner (this app and `instance_id`, one of its live instances): nothing here names
        another. `parent_call_id` ties it to one of that instance's calls still running;
        `request_id` is the idempotency key (a retry asks nothing new; a fresh one by default).
        Returns the record as recorded; the answer comes as `on_interaction_updated`, or
        through `wait`. Raises `LineUpError`: `tool_input_invalid` (not a standard request, or
        an expiry outside 1 min..24 h), `app_instance_not_found`, `app_scope_mismatch`,
        `call_already_final`."""
        body = (
            request.model_dump(mode="json", exclude_none=True)
            if isinstance(request, BaseModel)
            else dict(request)
        )
        reply = await self._host.call(
            "router",
            p.InteractionAskRequest(
                instance_id=instance_id or self._instance_id,
                request_id=request_id or uuid.uuid4().hex,
                request=body,
                parent_call_id=parent_call_id,
                presentation=presentation,
                expires_in_ms=expires_in_ms,
            ),
            p.InteractionReceipt,
        )
        self._updated(reply.interaction)
        return reply.interaction

    async def get(self, interaction_id: str) -> p.InteractionRecord:
        """One of this app's interactions as the runtime holds it (`interaction_not_found`
        for any other)."""
        reply = await self._host.call(
            "router", p.InteractionGetRequest(interaction_id=interaction_id), p.InteractionReceipt
        )
        self._updated(reply.interaction)
        return reply.interaction

    async def find(self, interaction_id: str | None) -> p.InteractionRecord | None:
        """`get`, or None when there is no id or no such interaction of this app's (one the
        runtime no longer has, say): the question an app keeps by id, if it is still there."""
        if interaction_id is None:
            return None
        try:
            return await self.get(interaction_id)
        except LineUpError as exc:
            if exc.code is not ErrorCode.INTERACTION_NOT_FOUND:
                raise
            return None

    async def cancel(
        self, interaction_id: str, reason: str = "cancelled_by_app"
    ) -> p.InteractionReceipt:
        """Withdraw a question not answered yet (`changed` False: it had its end already)."""
        reply = await self._host.call(
            "router",
            p.InteractionCancelRequest(interaction_id=interaction_id, reason=reason),
            p.InteractionReceipt,
        )
        self._updated(reply.interaction)
        return reply

    async def wait(self, interaction_id: str, *, timeout: float) -> p.InteractionRecord:
        """The interaction once it has its answer or its end (a `result`, or a terminal
        state). Raises `trio.TooSlowError` after `timeout` seconds."""
        with trio.fail_after(timeout):
            while True:
                ready = trio.Event()
                self._waiters.setdefault(interaction_id, []).append(ready)
                try:
                    record = self._records.get(interaction_id) or await self.get(interaction_id)
                    if _answered(record):
                        return record
                    await ready.wait()
                finally:
                    waiting = self._waiters.get(interaction_id, [])
                    if ready in waiting:
                        waiting.remove(ready)
                    if not waiting:
                        self._waiters.pop(interaction_id, None)

    def _updated(self, record: p.InteractionRecord) -> None:
        if not _answered(record):
            return  # nothing a waiter waits for
        self._records[record.interaction_id] = record
        while len(self._records) > MAX_KEPT_RECORDS:
            self._records.pop(next(iter(self._records)))
        for ready in self._waiters.get(record.interaction_id, []):
            ready.set()

    async def render(self, instance_id: str, view: dict[str, Any]) -> None:
        """Replace the instance's whole view state (the Shell renders it with trusted parts).
        A view is small (`p.MAX_VIEW_BYTES`); what grows goes in items (`put_items`)."""
        await self._host.call(
            "focus", p.ViewUpdateRequest(instance_id=instance_id, view=view), p.CommandReceipt
        )

    async def put_items(self, instance_id: str, items: Iterable[p.ViewItem]) -> None:
        """Add or replace items of the instance's list, in as many requests as their size
        takes (each within `p.MAX_VIEW_ITEMS_PUT_BYTES`). Raises `LineUpError` as focus
        refuses: `invalid_arguments` for an item over `p.MAX_VIEW_ITEM_BYTES`,
        `permission_denied` for an app not trusted with a component that shows items."""
        batch: list[p.ViewItem] = []
        used = 0
        for item in items:
            size = len(item.model_dump_json().encode())
            if batch and (
                used + size > p.MAX_VIEW_ITEMS_PUT_BYTES or len(batch) >= p.MAX_VIEW_ITEMS
            ):
                await self._put(instance_id, batch)
                batch, used = [], 0
            batch.append(item)
            used += size
        if batch:
            await self._put(instance_id, batch)

    async def _put(self, instance_id: str, batch: list[p.ViewItem]) -> None:
        await self._host.call(
            "focus",
            p.ViewItemsPutRequest(instance_id=instance_id, items=tuple(batch)),
            p.CommandReceipt,
        )


def _answered(record: p.InteractionRecord) -> bool:
    return record.result is not None or record.state in FINAL
