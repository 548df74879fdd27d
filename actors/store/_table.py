"""The store's handler table: which operation serves each request, and how.

Almost every request is served the same way: one operation `fn(conn, request, now)` runs through
the committer, and the reply is its result, given only after its transaction committed. So a
request is one row, not a method: `read(Request, fn)` runs in a read batch, `write(Request, fn)`
in a write batch, and `write_as(Request, fn)` in a write batch with `actor=`, the channel-bound
sender's name, for the audit rows the operation adds. The type checker holds each row's request
to what its operation takes.

Each area lists its rows next to its operations (`tool_calls.operations.HANDLERS`, …); `_actor`
assembles them into `StoreActor.table`. `ServedByTable` turns every row into one `@handles`
method when the actor's class is created, before the kernel collects the class's handlers, so a
row is dispatched like any handler: inline, answered at once when the committer is idle,
else in a task of its own that waits for its batch (`_handler`). A request named twice,
or also served by a method, is refused when the class is created.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Protocol, TypeVar

from lineup.actors.kernel.actor import handles
from lineup.actors.kernel.bus import Bus, Envelope
from lineup.actors.kernel.messages import Message

from ._committer import Committer
from ._db import Connection

__all__ = ["Served", "ServedByTable", "read", "write", "write_as"]

Q = TypeVar("Q", bound=Message)
Q_contra = TypeVar("Q_contra", contravariant=True)
R_co = TypeVar("R_co", covariant=True)

Access = Literal["read", "write", "write_as"]


class AuditedOperation(Protocol[Q_contra, R_co]):
    """An operation that writes audit rows in the name of `actor`."""

    def __call__(self, conn: Connection, req: Q_contra, now: float, /, *, actor: str) -> R_co: ...


@dataclass(frozen=True)
class Served:
    """One row of the table: `request` is answered by `operation`, with `access`."""

    request: type[Message]
    operation: Callable[..., Message]
    access: Access


def read(request: type[Q], operation: Callable[[Connection, Q, float], Message]) -> Served:
    return Served(request, operation, "read")


def write(request: type[Q], operation: Callable[[Connection, Q, float], Message]) -> Served:
    return Served(request, operation, "write")


def write_as(request: type[Q], operation: AuditedOperation[Q, Message]) -> Served:
    return Served(request, operation, "write_as")


_Handler = Callable[["ServedByTable", Message, Envelope], Message | Awaitable[Message]]


def _handler(row: Served) -> _Handler:
    """The row's handler: a plain function, so that the bus runs it inline. Its reply at once
    when the committer is idle and no other frame follows this one in the same read
    (`Committer.run_now`); else the wait for its batch (queued now, awaited in a task of its
    own), so that requests arriving together commit together."""
    op = row.operation
    write = row.access != "read"
    with_actor = row.access == "write_as"

    def serve(self: ServedByTable, msg: Message, env: Envelope) -> Message | Awaitable[Message]:
        if with_actor:
            actor = env.sender.name

            def run(conn: Connection) -> Message:
                return op(conn, msg, time.time(), actor=actor)

        else:

            def run(conn: Connection) -> Message:
                return op(conn, msg, time.time())

        if not self.bus.more_frames:
            done, reply = self._committer.run_now(run, write=write)
            if done:
                assert reply is not None  # an operation answers with a message
                return reply
        return self._committer.queue(run, write=write)

    return serve


class ServedByTable:
    """Mixin of an actor, placed before `Actor` in its bases: serves every row of the class's own
    `table` through `self._committer`. Raises `TypeError` at class creation for a request served
    twice (two rows, or a row and a method)."""

    table: ClassVar[tuple[Served, ...]] = ()
    _committer: Committer
    bus: Bus

    def __init_subclass__(cls, **kwargs: Any) -> None:
        served = {
            getattr(attr, "__lineup_handles__", None)
            for klass in cls.__mro__
            for attr in vars(klass).values()
        }
        for row in cls.__dict__.get("table", ()):
            name = "on_" + row.request.TYPE.removeprefix("store.").replace(".", "_")
            if row.request in served or name in cls.__dict__:
                raise TypeError(f"{cls.__name__} serves {row.request.__name__} twice")
            served.add(row.request)
            serve = _handler(row)
            serve.__name__ = name
            serve.__qualname__ = f"{cls.__qualname__}.{name}"
            setattr(cls, name, handles(row.request)(serve))
        # The kernel collects the class's handlers now, the rows' among them.
        super().__init_subclass__(**kwargs)
