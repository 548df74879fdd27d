"""Test-only actors, spawned through the real zygote by the supervisor tests.

Their messages live under prefixes the ACL already grants (`router.inbound.*` from a transport,
`router.sdk.*` from a MiniApp), so the tests exercise the production ACL table unchanged.
"""

from __future__ import annotations

import contextlib
import gc
import os
from pathlib import Path
from typing import Literal

import trio

from lineup.actors.kernel import (
    Actor,
    ActorKind,
    Envelope,
    HealthReply,
    HealthRequest,
    LineUpError,
    Message,
    handles,
)


class HangRequest(Message):
    """Answered never: a request that is guaranteed to be in flight when the actor dies."""

    type: Literal["router.inbound.test_hang"] = "router.inbound.test_hang"


class EchoRequest(Message):
    type: Literal["router.inbound.test_echo"] = "router.inbound.test_echo"
    text: str


class EchoReply(Message):
    type: Literal["router.inbound.test_echo.reply"] = "router.inbound.test_echo.reply"
    text: str
    pid: int
    collecting: bool = False  # the child's garbage collector is on
    frozen: int = 0  # objects its collector never walks (`gc.get_freeze_count()`)


class HangActor(Actor):
    kind = ActorKind.ROUTER

    @handles(HangRequest)
    async def on_hang(self, msg: HangRequest, env: Envelope) -> Message:
        (self.ctx.data_dir / f"hang-{os.getpid()}").touch()
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    @handles(EchoRequest)
    async def on_echo(self, msg: EchoRequest, env: Envelope) -> EchoReply:
        return EchoReply(
            text=msg.text, pid=os.getpid(), collecting=gc.isenabled(), frozen=gc.get_freeze_count()
        )


class SlowRestartActor(HangActor):
    """Ready at once the first time; every later incarnation takes `restart_s` to be ready
    (a child whose restart waits on something), so a supervisor restarting one child at a
    time would hold every other restart behind it."""

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        if self.ctx.incarnation > 1:
            await trio.sleep(float(self.ctx.config.get("restart_s", 5.0)))
        task_status.started()
        await trio.sleep_forever()


class ReadyAfterPeerActor(Actor):
    """Ready only once its peer (`config["peer"]`) has answered a health request: started
    strictly before that peer, it could never be ready."""

    kind = ActorKind.GATEWAY

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        peer = str(self.ctx.config["peer"])
        await self.bus.request(peer, HealthRequest(), expect=HealthReply, timeout=30)
        task_status.started()
        await trio.sleep_forever()


class CrashOnStartActor(Actor):
    """Dies before it is ready, every time: a crash loop."""

    kind = ActorKind.GATEWAY

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        raise RuntimeError("crashing on purpose")


class ExitCleanlyActor(Actor):
    """Becomes ready, then exits with status 0 when its config says so."""

    kind = ActorKind.GATEWAY

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        marker = Path(self.ctx.data_dir) / f"exit-{self.ctx.identity.name}"
        if marker.exists():
            await trio.sleep_forever()
        marker.touch()
        await trio.lowlevel.checkpoint()
        os._exit(int(self.ctx.config.get("exit_code", 0)))


class ForbiddenSenderActor(Actor):
    """A MiniApp-kind child that, in its first life, tries what its ACL forbids.

    It first asks for a channel to the store (refused by the supervisor; the code it got is
    written to `<data_dir>/forbidden-store`), then sends the router a health request, which the
    router refuses and reports; the supervisor then kills it, possibly before it can write
    anything more, so the test reads that part from the audit rows.
    """

    kind = ActorKind.MINIAPP

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        if self.ctx.incarnation == 1:
            try:
                await self.bus.request("store", HealthRequest(), expect=HealthReply, timeout=5)
                code = "ok"
            except LineUpError as exc:
                code = exc.code.value
            (self.ctx.data_dir / "forbidden-store").write_text(code)
            with contextlib.suppress(LineUpError):
                await self.bus.request("router", HealthRequest(), expect=HealthReply, timeout=5)
        task_status.started()
        await trio.sleep_forever()
