"""The actor base class and the process entry point every child runs.

An actor is a class with handlers:

    class StoreActor(Actor):
        kind = ActorKind.STORE

        async def run(self, *, task_status=trio.TASK_STATUS_IGNORED):
            ...open things...
            task_status.started()
            await trio.sleep_forever()

        @handles(OutboxAppendRequest)
        async def on_outbox_append(self, msg: OutboxAppendRequest, env: Envelope) -> Reply: ...

`actor_main` is what the zygote's forked child calls: it builds the bus on the inherited control
channel, starts the actor, tells the supervisor it is ready, and exits when the control channel
closes (the supervisor stopped it, or died), once the actor's `finish` has handed on its work.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Final, TypeVar

import trio

from lineup._logs import configure_logs

from ._profiling import profile_on_signals
from .audit import AuditRecord
from .bus import SUPERVISOR, Bus, Envelope, Outcome
from .channel import Channel
from .control import ActorReadyEvent, HealthReply, HealthRequest
from .errors import ErrorCode, LineUpError
from .identity import ActorKind, Identity
from .messages import Message

__all__ = [
    "EXIT_CANNOT_START",
    "Actor",
    "ActorContext",
    "BootInfo",
    "CannotStart",
    "actor_main",
    "handles",
    "load_target",
]

# sysexits' EX_CONFIG: as configured, this child cannot run, and a restart would not help.
EXIT_CANNOT_START: Final = 78


class CannotStart(Exception):
    """Raised by an actor's `run`, before it is ready, when its configuration cannot work (the
    port it must listen on is taken). `actor_main` prints the reason as one line on stderr
    (`lineup: error: <reason>`) and exits `EXIT_CANNOT_START`; the supervisor stops the tree
    instead of restarting the child. The reason must name no user data."""


log = logging.getLogger("lineup.actor")

M = TypeVar("M", bound=Message)
_HandlerFn = Callable[[Any, Any, Envelope], Message | Awaitable[Message | None] | None]
# `handles` keeps the method's own type, so a caller (a test calling it directly) sees its real
# reply type.
_H = TypeVar("_H", bound=_HandlerFn)


def handles(message: type[Message]) -> Callable[[_H], _H]:
    """Mark an actor method as the handler of one message type.

    A plain `def` handler runs inline in the channel reader (it cannot block, so it cannot stall
    the channel); an `async def` handler runs in a task of its own.
    """

    def mark(fn: _H) -> _H:
        fn.__lineup_handles__ = message  # type: ignore[attr-defined]
        return fn

    return mark


@dataclass(frozen=True)
class BootInfo:
    """Everything a child is told at birth (JSON-able; crosses the zygote socket)."""

    name: str
    kind: str
    incarnation: int
    target: str  # "package.module:Class"
    data_dir: str
    config: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "incarnation": self.incarnation,
            "target": self.target,
            "data_dir": self.data_dir,
            "config": self.config,
        }

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> BootInfo:
        return cls(
            raw["name"],
            raw["kind"],
            int(raw["incarnation"]),
            raw["target"],
            raw["data_dir"],
            dict(raw.get("config") or {}),
        )


@dataclass
class ActorContext:
    identity: Identity
    incarnation: int
    data_dir: Path
    config: dict[str, Any]
    bus: Bus
    started_at: float = field(default_factory=time.monotonic)


class Actor:
    """Base of every actor. Subclasses set `kind`, override `run`, and declare handlers."""

    kind: ClassVar[ActorKind]
    _handlers: ClassVar[dict[type[Message], _HandlerFn]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        handlers: dict[type[Message], _HandlerFn] = {}
        for klass in reversed(cls.__mro__):
            for attr in vars(klass).values():
                message = getattr(attr, "__lineup_handles__", None)
                if message is not None:
                    handlers[message] = attr
        cls._handlers = handlers

    def __init__(self, ctx: ActorContext) -> None:
        self.ctx = ctx
        self.bus = ctx.bus

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Open what the actor needs, then `task_status.started()`. Default: nothing to open."""
        task_status.started()
        await trio.sleep_forever()

    async def finish(self) -> None:
        """Once the control channel closed (the supervisor stops this actor, or died), before
        the actor's tasks are cancelled: hand on what was already asked of it. Default:
        nothing. Bounded by the actor itself, well within its `shutdown_grace` (then SIGTERM)."""

    def dispatch(self, env: Envelope) -> Outcome:
        """The handler's outcome: its reply, or (for an `async def` handler) an awaitable."""
        handler = self._handlers.get(type(env.body))
        if handler is None:
            raise LineUpError(ErrorCode.NO_HANDLER, env.body.TYPE)
        return handler(self, env.body, env)

    # The store writes its audit rows itself; every other actor's bus sends them to the store.
    writes_own_audit: ClassVar[bool] = False

    async def write_audit(self, records: list[AuditRecord]) -> None:
        """Persist audit rows locally (only where `writes_own_audit`). Must not raise."""
        raise NotImplementedError

    @handles(HealthRequest)
    def on_health(self, msg: HealthRequest, env: Envelope) -> HealthReply:
        return HealthReply(
            name=self.ctx.identity.name,
            pid=os.getpid(),
            incarnation=self.ctx.incarnation,
            uptime_s=time.monotonic() - self.ctx.started_at,
        )


def load_target(target: str) -> type[Actor]:
    module_name, _, attr = target.partition(":")
    cls = getattr(importlib.import_module(module_name), attr)
    if not (isinstance(cls, type) and issubclass(cls, Actor)):
        raise TypeError(f"{target} is not an Actor")
    return cls


def actor_main(boot: BootInfo, control_fd: int) -> int:
    """Run one actor until its control channel closes. Returns the process exit code."""
    configure_logs(f"{boot.name}[%(process)d]")
    profile_on_signals(boot.name)  # `lineup.ops.bench --profile` only
    try:
        trio.run(_actor_main, boot, control_fd)
    except KeyboardInterrupt:
        return 130
    except BaseException as exc:
        refused = _cannot_start(exc)
        if refused is None:
            raise
        print(f"lineup: error: {refused}", file=sys.stderr, flush=True)
        return EXIT_CANNOT_START
    return 0


def _leaves(group: BaseExceptionGroup[LineUpError]) -> list[LineUpError]:
    leaves: list[LineUpError] = []
    for exc in group.exceptions:
        leaves.extend(_leaves(exc) if isinstance(exc, BaseExceptionGroup) else [exc])
    return leaves


def _cannot_start(exc: BaseException) -> CannotStart | None:
    """The CannotStart that `exc` is, or that its nurseries' groups hold."""
    while isinstance(exc, BaseExceptionGroup):
        found = exc.subgroup(CannotStart)
        if found is None:
            return None
        exc = found.exceptions[0]
    return exc if isinstance(exc, CannotStart) else None


async def _actor_main(boot: BootInfo, control_fd: int) -> None:
    identity = Identity(ActorKind(boot.kind), boot.name)
    cls = load_target(boot.target)
    actor: Actor | None = None

    def dispatch(env: Envelope) -> Outcome:
        assert actor is not None
        return actor.dispatch(env)

    bus = Bus(identity, dispatch, incarnation=boot.incarnation)
    ctx = ActorContext(identity, boot.incarnation, Path(boot.data_dir), boot.config, bus)
    actor = cls(ctx)
    bus.set_handler(actor.dispatch)  # no trampoline through `dispatch` above on every frame
    if cls.writes_own_audit:
        bus.audit_locally = actor.write_audit
    stopped = trio.Event()  # the control channel closed: the supervisor stopped us, or died
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(bus.run)
            control = bus.connect(
                Identity(ActorKind.SUPERVISOR, SUPERVISOR),
                0,
                Channel.from_fd(control_fd, carries_fds=True),
            )
            stopped = control.closed
            await nursery.start(actor.run)
            await bus.notify(SUPERVISOR, ActorReadyEvent(pid=os.getpid()))
            await stopped.wait()
            await actor.finish()
            nursery.cancel_scope.cancel()
    except* LineUpError as refused:
        if not stopped.is_set():
            raise
        # The tree is stopping: work that needed a peer (one introduced through the
        # supervisor, or the supervisor itself) found none. Ending now is what was asked.
        codes = sorted({e.code.value for e in _leaves(refused)})
        log.info("actor.stopped_mid_work codes=%s", ",".join(codes))
