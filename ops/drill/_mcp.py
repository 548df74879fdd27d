"""The drill's MCP clients: `lineup mcp` as an Agent, used over stdio while the faults hit.

Theory of operation: `drive` starts `lineup mcp --data-dir <runtime>` as an MCP host does (a
child process speaking newline-delimited JSON-RPC on its stdin and stdout), makes the MCP
handshake, and then keeps a few requests in flight: `tools/call` of the drill app's tools
(`drill.echo`, `drill.work`), `tools/list`, and `resources/read` of the conversation. The client
is raw JSON-RPC, written here, so that it sees every message as sent: an SDK client would match
answers to requests and drop what matched nothing. At the end of the load it stops asking, waits
for what is in flight, and closes stdin (the server exits 0). If the server exits on its own,
what it left unanswered is recorded and a new one is started: a client does that, and the runs
of `lineup mcp` are counted in the report.

The invariant, `mcp_requests_answered_once`: every request got exactly one response (a result
or an error), none came for an id never asked, and every `tools/call` result is either the
tool's own answer (the number asked for) or an `isError` result naming a stable code — never a
wrong number. The calls themselves are Agent calls like any other: the core invariants (one
terminal message per call at the AppServer, a final state in the store) cover them.
"""

from __future__ import annotations

import json
import logging
import os
import random
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Final

import trio

from lineup.ops.mcp import refusal_code

from ._check import Invariant
from ._exercise import Setup, Stage
from ._report import percentile

__all__ = ["McpClients", "check_mcp"]

log = logging.getLogger("lineup.drill")

PROTOCOL_VERSION: Final = "2025-06-18"
IN_FLIGHT: Final = 8
_GAP_S: Final = (0.05, 0.6)  # between two requests of one client slot
_SETTLE_S: Final = 120.0  # after the load, for the answers still to come
_START_S: Final = 30.0  # for the handshake's answer
MESSAGES_URI: Final = "lineup://conversation/messages"


@dataclass
class Asked:
    method: str
    n: int | None = None  # the number a tools/call asked its tool to answer
    answers: list[dict[str, Any]] = field(default_factory=list)
    asked_at: float = 0.0  # trio's clock
    took: float | None = None  # seconds to its first answer


def check_mcp(asked: dict[int, Asked], strays: list[Any]) -> list[Invariant]:
    rule = Invariant(
        "mcp_requests_answered_once",
        "every MCP request got exactly one response and none came unasked; a tool's result is "
        "its own answer or an error with a stable code",
    )
    for request_id, request in sorted(asked.items()):
        if len(request.answers) != 1:
            rule.breach(f"{request.method} #{request_id}: {len(request.answers)} responses")
            continue
        problem = _wrong(request, request.answers[0])
        if problem is not None:
            rule.breach(f"{request.method} #{request_id}: {problem}")
    for stray in strays[:5]:
        rule.breach(f"a response to #{stray}, never asked")
    return [rule]


def _wrong(request: Asked, answer: dict[str, Any]) -> str | None:
    if "error" in answer:
        error = answer["error"]
        return None if isinstance(error, dict) and "code" in error else "a malformed error"
    result = answer.get("result")
    if not isinstance(result, dict):
        return "no result"
    if request.method != "tools/call":
        return None
    content = result.get("structuredContent")
    if result.get("isError"):
        return None if refusal_code(result) else "an error without a code"
    got = content.get("n") if isinstance(content, dict) else None
    return None if got == request.n else f"answered {got}, asked {request.n}"


def outcome(request: Asked) -> str:
    """How one request ended, for the report: ok, error:CODE, rpc_error, unanswered."""
    if len(request.answers) != 1:
        return "unanswered" if not request.answers else "answered_twice"
    answer = request.answers[0]
    if "error" in answer:
        return "rpc_error"
    result = answer.get("result") or {}
    if result.get("isError"):
        return f"error:{refusal_code(result)}"
    return "ok"


class ServerGone(Exception):
    """`lineup mcp` closed its stdout."""


@dataclass
class _Session:
    """One `lineup mcp` child and its stdio: requests written, every message read."""

    process: trio.Process
    owner: McpClients
    _buffer: bytes = b""
    _sending: trio.Lock = field(default_factory=trio.Lock)  # one message at a time, whole

    async def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        try:
            async with self._sending:
                await self.process.stdin.send_all(json.dumps(message).encode() + b"\n")
        except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            raise ServerGone from exc

    async def read(self) -> None:
        """Take every message the server writes until it closes stdout."""
        assert self.process.stdout is not None
        while True:
            while b"\n" not in self._buffer:
                chunk = await self.process.stdout.receive_some(65536)
                if not chunk:
                    return
                self._buffer += chunk
            line, self._buffer = self._buffer.split(b"\n", 1)
            if line.strip():
                await self._take(json.loads(line))

    async def _take(self, message: dict[str, Any]) -> None:
        if "method" in message and "id" in message:  # the server asks (a ping): answer it
            await self.send({"jsonrpc": "2.0", "id": message["id"], "result": {}})
        elif "method" in message:
            self.owner.notifications[str(message["method"])] += 1
        else:
            self.owner.answer(message)


@dataclass
class McpClients:
    """The exercise (see the module's docstring)."""

    seed: int
    name: str = "mcp"
    asked: dict[int, Asked] = field(default_factory=dict)
    strays: list[Any] = field(default_factory=list)
    notifications: Counter[str] = field(default_factory=Counter)
    servers: int = 0
    server_exits: list[int | None] = field(default_factory=list)
    _next_id: int = 0
    _in_flight: set[int] = field(default_factory=set)
    _answered: trio.Event = field(default_factory=trio.Event)

    def prepare(self, setup: Setup) -> list[str]:
        return []

    def answer(self, message: dict[str, Any]) -> None:
        request_id = message.get("id")
        request = self.asked.get(request_id) if isinstance(request_id, int) else None
        if request is None or not isinstance(request_id, int):
            self.strays.append(request_id)
        else:
            request.answers.append(message)
            if request.took is None:
                request.took = trio.current_time() - request.asked_at
            self._in_flight.discard(request_id)
        self._answered.set()
        self._answered = trio.Event()

    def pending(self) -> int:
        """Requests the running server has not answered yet (a server that exited answers
        nothing more: what it left is the check's business, not quiescence's)."""
        return len(self._in_flight)

    async def drive(self, stage: Stage, seconds: float) -> None:
        rng = random.Random(self.seed + 23)
        deadline = trio.current_time() + seconds
        await stage.agent.inventory_known()
        while trio.current_time() < deadline:
            await self._one_server(stage, rng, deadline)

    async def _one_server(self, stage: Stage, rng: random.Random, deadline: float) -> None:
        """One `lineup mcp`, used until `deadline` and settled, or until it exits."""
        setup = stage.setup
        with (setup.data_dir / "mcp.log").open("ab") as log_file:
            process = await trio.lowlevel.open_process(
                [sys.executable, "-m", "lineup", "mcp", "--data-dir", str(setup.runtime_dir)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log_file,
                env={**os.environ, "LINEUP_LOG": os.environ.get("LINEUP_LOG", "WARNING")},
            )
        self.servers += 1
        session = _Session(process, self)
        try:
            async with trio.open_nursery() as nursery:

                async def read() -> None:
                    await session.read()
                    nursery.cancel_scope.cancel()  # it exited: what is in flight stays unanswered

                nursery.start_soon(read)
                await self._handshake(session)
                async with trio.open_nursery() as slots:
                    for _ in range(IN_FLIGHT):
                        slots.start_soon(self._ask_until, session, rng.randrange(2**32), deadline)
                with trio.move_on_after(_SETTLE_S):
                    while self.pending():
                        await self._answered.wait()
                nursery.cancel_scope.cancel()
        except* ServerGone:
            pass  # it exited: the next one takes over
        finally:
            self._in_flight.clear()
            with trio.CancelScope(shield=True):
                if process.stdin is not None:
                    await process.stdin.aclose()
                with trio.move_on_after(10):
                    await process.wait()
                if process.returncode is None:
                    process.kill()
                    await process.wait()
                self.server_exits.append(process.returncode)

    async def _handshake(self, session: _Session) -> None:
        request_id = self._request_id("initialize")
        await session.send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "method": "initialize",
                "params": {
                    "protocolVersion": PROTOCOL_VERSION,
                    "capabilities": {},
                    "clientInfo": {"name": "lineup-drill", "version": "1"},
                },
            }
        )
        with trio.fail_after(_START_S):
            while not self.asked[request_id].answers:
                await self._answered.wait()
        await session.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    async def _ask_until(self, session: _Session, seed: int, deadline: float) -> None:
        """One slot: a request, its answer, a pause, the next, until `deadline`."""
        rng = random.Random(seed)
        while trio.current_time() < deadline:
            draw = rng.random()
            n = rng.randrange(10**9)
            if draw < 0.6:
                params: dict[str, Any] = {"name": "drill.echo", "arguments": {"n": n}}
                method = "tools/call"
            elif draw < 0.8:
                work = {"n": n, "ms": rng.randrange(0, 300)}
                params, method = {"name": "drill.work", "arguments": work}, "tools/call"
            elif draw < 0.9:
                params, method = {}, "tools/list"
            else:
                params, method = {"uri": MESSAGES_URI}, "resources/read"
            request_id = self._request_id(method, n if method == "tools/call" else None)
            await session.send(
                {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
            )
            while not self.asked[request_id].answers:
                await self._answered.wait()
            await trio.sleep(rng.uniform(*_GAP_S))

    def _request_id(self, method: str, n: int | None = None) -> int:
        self._next_id += 1
        self.asked[self._next_id] = Asked(method, n, asked_at=trio.current_time())
        self._in_flight.add(self._next_id)
        return self._next_id

    async def unsettled(self, stage: Stage) -> int:
        return self.pending()

    def check(self, setup: Setup) -> list[Invariant]:
        return check_mcp(self.asked, self.strays)

    def report(self) -> dict[str, Any]:
        by_method = Counter(request.method for request in self.asked.values())
        outcomes = Counter(
            f"{request.method} {outcome(request)}" for request in self.asked.values()
        )
        took = sorted(r.took for r in self.asked.values() if r.took is not None)
        return {
            "requests": len(self.asked),
            "answered_in_s": {
                "p50": percentile(took, 0.5),
                "p99": percentile(took, 0.99),
                "max": took[-1] if took else None,
            },
            "by_method": dict(sorted(by_method.items())),
            "outcomes": dict(sorted(outcomes.items())),
            "notifications": dict(sorted(self.notifications.items())),
            "servers_started": self.servers,
            "server_exit_codes": self.server_exits,
        }
