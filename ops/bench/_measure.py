"""Kernel measurements and their raw baselines; `__main__` pairs them into figures."""

from __future__ import annotations

import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

import apsw
import trio

from lineup.actors.kernel import (
    ActorKind,
    ActorRestarted,
    Bus,
    HealthReply,
    HealthRequest,
    Identity,
)
from lineup.actors.store.messages import OutboxAppendReply, OutboxAppendRequest
from lineup.supervisor import ChildSpec, Intensity, Supervisor

from ._actors import PingReply, PingRequest

FRAME_BYTES = 300


def pct(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# ----------------------------------------------------------------------------- raw baseline


def _echo_child(sock: socket.socket) -> None:
    async def echo() -> None:
        s = trio.socket.from_stdlib_socket(sock)
        while data := await s.recv(65536):
            await s.send(data)

    trio.run(echo)


def raw_pingpong(n: int) -> list[float]:
    """Round trips of a FRAME_BYTES message between two trio processes on a socketpair."""
    a, b = socket.socketpair()
    pid = os.fork()
    if pid == 0:
        a.close()
        try:
            _echo_child(b)
        finally:
            os._exit(0)
    b.close()

    async def main() -> list[float]:
        s = trio.socket.from_stdlib_socket(a)
        payload = b"x" * FRAME_BYTES
        samples = []
        for _ in range(n):
            t0 = time.perf_counter()
            await s.send(payload)
            got = 0
            while got < FRAME_BYTES:
                got += len(await s.recv(65536))
            samples.append(time.perf_counter() - t0)
        return samples

    try:
        return trio.run(main)
    finally:
        a.close()
        os.waitpid(pid, 0)


# ----------------------------------------------------------------------------- the tree


async def with_tree(
    specs: list[ChildSpec],
    fn: Callable[[Supervisor, Bus], Awaitable[object]],
    *,
    kind: ActorKind = ActorKind.TRANSPORT,
    intensity: Intensity | None = None,
) -> object:
    with tempfile.TemporaryDirectory(prefix="lu-bench-") as tmp:
        supervisor = Supervisor(
            specs,
            data_dir=Path(tmp),
            preload=("lineup.ops.bench._actors",),
            intensity=intensity or Intensity(),
        )
        async with trio.open_nursery() as nursery:
            await nursery.start(supervisor.run)
            bus = await nursery.start(supervisor.attach, Identity(kind, "bench"))
            try:
                return await fn(supervisor, bus)
            finally:
                nursery.cancel_scope.cancel()


PONG = ChildSpec("pong", ActorKind.ROUTER, "lineup.ops.bench._actors:PongActor")
STORE = ChildSpec("store", ActorKind.STORE, "lineup.actors.store:StoreActor")


async def bus_roundtrip(n: int) -> list[float]:
    async def run(_sup: Supervisor, bus: Bus) -> list[float]:
        pad = "x" * (FRAME_BYTES - 120)  # frame header + JSON keys bring it to ~300 bytes
        for i in range(200):  # warm up: introduction, caches
            await bus.request("pong", PingRequest(n=i, pad=pad), expect=PingReply)
        samples = []
        for i in range(n):
            t0 = time.perf_counter()
            await bus.request("pong", PingRequest(n=i, pad=pad), expect=PingReply)
            samples.append(time.perf_counter() - t0)
        return samples

    result = await with_tree([PONG], run)
    assert isinstance(result, list)
    return result


async def bus_rate(n: int, concurrency: int = 8) -> float:
    """Bus requests/s to one actor with `concurrency` requests in flight."""

    async def run(_sup: Supervisor, bus: Bus) -> float:
        pad = "x" * (FRAME_BYTES - 120)
        for i in range(200):  # warm up, as for the round trip
            await bus.request("pong", PingRequest(n=i, pad=pad), expect=PingReply)

        async def requester(offset: int) -> None:
            for i in range(offset, n, concurrency):
                await bus.request("pong", PingRequest(n=i, pad=pad), expect=PingReply)

        t0 = time.perf_counter()
        async with trio.open_nursery() as nursery:
            for offset in range(concurrency):
                nursery.start_soon(requester, offset)
        return n / (time.perf_counter() - t0)

    result = await with_tree([PONG], run)
    assert isinstance(result, float)
    return result


async def store_writes(seconds: float, concurrency: int = 16) -> float:
    """Acknowledged outbox appends per second through the store actor."""

    async def run(_sup: Supervisor, bus: Bus) -> float:
        done = 0
        stop_at = trio.current_time() + seconds

        async def writer() -> None:
            nonlocal done
            while trio.current_time() < stop_at:
                await bus.request(
                    "store",
                    OutboxAppendRequest(
                        outbox_id=uuid.uuid4().hex,
                        conversation_id="c1",
                        kind="lineup.v1.text",
                        body={"markdown": "benchmark"},
                    ),
                    expect=OutboxAppendReply,
                )
                done += 1

        t0 = time.perf_counter()
        async with trio.open_nursery() as nursery:
            for _ in range(concurrency):
                nursery.start_soon(writer)
        return done / (time.perf_counter() - t0)

    result = await with_tree([STORE], run, kind=ActorKind.ROUTER)
    assert isinstance(result, float)
    return result


def raw_apsw_commits(seconds: float) -> float:
    """Single-row commits per second, in-process, WAL + synchronous=NORMAL."""
    with tempfile.TemporaryDirectory(prefix="lu-bench-") as tmp:
        db = apsw.Connection(str(Path(tmp) / "raw.db"))
        # One statement per call: apsw stops a multi-statement execute at the first result row.
        db.execute("PRAGMA journal_mode=WAL").fetchall()
        db.execute("PRAGMA synchronous=NORMAL").fetchall()
        db.execute("CREATE TABLE t (id TEXT PRIMARY KEY, body TEXT)")
        n = 0
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < seconds:
            with db:
                db.execute("INSERT INTO t VALUES (?, ?)", (uuid.uuid4().hex, '{"m":"x"}'))
            n += 1
        rate = n / (time.perf_counter() - t0)
        db.close()
        return rate


async def restart_latency(kills: int) -> list[float]:
    """SIGKILL of an actor → its replacement answering health."""

    async def run(supervisor: Supervisor, bus: Bus) -> list[float]:
        samples = []
        for _ in range(kills):
            old = (await bus.request("pong", HealthRequest(), expect=HealthReply)).incarnation
            t0 = time.perf_counter()
            supervisor.kill("pong", signal.SIGKILL)
            while True:
                try:
                    reply = await bus.request("pong", HealthRequest(), expect=HealthReply)
                except ActorRestarted:
                    continue
                if reply.incarnation != old:
                    break
            samples.append(time.perf_counter() - t0)
        return samples

    # Each kill is measured as a first failure: no crash-loop backoff, no escalation. (The
    # backoff is a policy for crash loops; this figure is the restart path itself.)
    no_backoff = Intensity(max_restarts=10_000, period=0.001)
    result = await with_tree([PONG], run, intensity=no_backoff)
    assert isinstance(result, list)
    return result


def fresh_interpreter_times(runs: int) -> list[float]:
    """A fresh interpreter importing trio and pydantic: what a spawn costs without a zygote."""
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import trio, pydantic"], check=True)
        samples.append(time.perf_counter() - t0)
    return samples


async def spawn_times(n: int) -> list[float]:
    """Zygote fork → child ready, as the supervisor logs it."""
    specs = [
        ChildSpec(f"p{i}", ActorKind.ROUTER, "lineup.ops.bench._actors:PongActor") for i in range(n)
    ]

    async def run(supervisor: Supervisor, _bus: Bus) -> list[float]:
        return [
            c.started_at - c.spawned_at
            for c in supervisor.children.values()
            if c.started_at is not None
        ]

    result = await with_tree(specs, run)
    assert isinstance(result, list)
    return result


def median(samples: list[float]) -> float:
    return statistics.median(samples)
