"""Focus's way out: what its services do to the rest of the tree, in one place.

A service of focus decides on the books (`AppBook`, `Instances`, the views' and the Surfaces')
and reaches other processes only through a `Port`: the bus (as focus), the store, a tell to an
app, the router or the hostbridge, and the actor's nursery for what runs in the background.
The nursery is the actor's while it runs; before and after, what would run in it is dropped
(`soon`), as a request still being answered while focus shuts down has nowhere to run it.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, Final, TypeVar

import trio

from lineup.actors.kernel import AuditRecord, Bus, Envelope, Identity, LineUpError, Message

__all__ = ["NOTIFY_TIMEOUT", "STORE_TIMEOUT", "Port"]

log = logging.getLogger("lineup.focus")

M = TypeVar("M", bound=Message)

NOTIFY_TIMEOUT: Final = 5.0
STORE_TIMEOUT: Final = 30.0


class Port:
    """The bus as focus (`me`), and the nursery of the running actor (see the module's
    docstring)."""

    def __init__(self, bus: Bus, me: Identity) -> None:
        self.bus = bus
        self.me = me
        self.nursery: trio.Nursery | None = None  # while the actor runs

    def soon(self, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        """Run `fn(*args)` in the actor's nursery; dropped when there is none."""
        if self.nursery is not None:
            self.nursery.start_soon(fn, *args)

    async def store(self, request: Message, expect: type[M]) -> M:
        return await self.bus.request(
            "store", request, expect=expect, timeout=STORE_TIMEOUT, retry=True
        )

    async def tell_app(self, app_scope: str, event: Message) -> None:
        code = await self.bus.tell(f"miniapp:{app_scope}", event, timeout=NOTIFY_TIMEOUT)
        if code is not None:
            log.info("focus.app_not_told app=%s code=%s", app_scope, code.value)

    async def tell_router(self, event: Message) -> None:
        # Not told: the router publishes the inventory and sweeps ended instances when it
        # starts.
        code = await self.bus.tell("router", event, timeout=NOTIFY_TIMEOUT)
        if code is not None:
            log.warning("focus.router_not_told type=%s code=%s", event.TYPE, code.value)

    async def tell_hostbridge(self, event: Message) -> None:
        # Not told: the Shell asks for the app list, every view and page when it
        # (re)connects; a Shell connected meanwhile shows the old one until then, hence the
        # line.
        code = await self.bus.tell("hostbridge", event, timeout=NOTIFY_TIMEOUT)
        if code is not None:
            log.info("focus.hostbridge_not_told type=%s code=%s", event.TYPE, code.value)

    def surface_refused(self, env: Envelope, subject: str, refused: LineUpError) -> LineUpError:
        """Audit a refused Surface request by its type and code (rate-bounded per sender: a
        Surface's messages are the user's iframe's, as many as it likes), and return it."""
        self.bus.audit_refusal(
            AuditRecord(
                event="focus.surface_refused",
                actor=self.me.name,
                peer=env.sender.name,
                code=refused.code.value,
                message_type=env.body.TYPE,
                subject_id=subject[:200],
            )
        )
        return refused
