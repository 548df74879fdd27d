"""One drill run, end to end: start, load, faults, quiescence, stop, check, report.

Theory of operation: the runtime is the real `lineup run` in its own process, with the
embedded reference AppServer, a scratch data dir, the drill's MiniApp as a dev app, and the
transport sent through the drill's `LinkProxy`. The load Agent talks to the AppServer directly
and the Shell user to the hostbridge's real WebSocket; the Agent's standard interactions are
answered (or not) by that user, per `_asking`; beside them, each `Exercise` (`_exercise`) drives
one more part of the product. For `duration` seconds the load runs while the `Injector` fires
the seeded faults; then everything is resumed and restored, the user closes every open
instance, and the drill waits for quiescence: every call answered at the Agent, every typed
message at the Agent, in the store (read-only) no unacknowledged delivery, no unsent outbox row,
no open call or interaction, and nothing an exercise has left unsettled. Its bound is on
progress, not on time: the drill gives up once `quiesce_timeout` seconds pass with no new low in
what is left (the backlog a loaded machine drains slowly still drains; work that is stuck or
lost stops draining), counted from the later of the load's end and the last expiry due (every
run asks questions of the shortest expiry, a minute, at its start: a shorter run waits for
them). Then the runtime is stopped with SIGTERM (its exit status says whether the supervisor
ever escalated), and the invariants are checked from the two databases and each exercise's own
evidence. If the runtime dies on its own, the load stops at once and the checks run.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Final

import apsw
import trio

from lineup.actors.kernel.control import ChildStatus, StatusReply, StatusRequest
from lineup.ops.agent import AgentClient
from lineup.supervisor._control import control_request
from lineup.supervisor._runtime import free_port
from lineup.supervisor._spec import Intensity
from lineup.wire import INVENTORY

from ._artifacts import ArtifactsExercise
from ._asking import Answerer, Asker
from ._capabilities import CapabilitiesExercise
from ._check import (
    STALE,
    TERMINAL_STATES,
    TERMINAL_TYPES,
    Evidence,
    Expected,
    Invariant,
    check,
    interaction_endings,
)
from ._dev_reloads import DevReloads
from ._exercise import Exercise, Setup, Stage
from ._faults import KINDS, Fault, Injector, plan
from ._installs import Installs
from ._mcp import McpClients
from ._mcp_apps import McpApps
from ._proxy import LinkProxy
from ._report import percentile, timeline_svg
from ._surfaces import SurfacesExercise
from ._workload import LoadAgent, ShellUser

__all__ = ["DrillOptions", "run_drill"]

log = logging.getLogger("lineup.drill")

DRILL_APP: Final = Path(__file__).resolve().parent / "drillapp"
AGENT_ID: Final = "demo-agent"
AGENT_SECRET: Final = "demo-secret"
_STARTUP_S: Final = 30.0
_STOP_S: Final = 30.0
# A script's last question, once the load is quiet (`Asker.ask_the_starved`): for the Agent to
# learn the newest revision, then for the question to be taken.
STARVED_ASK_S: Final = 60.0
# The parts of the product the drill drives besides its core load (`_exercise`), by name: each
# is made from the run's seed.
EXERCISES: Final[dict[str, Callable[[int], Exercise]]] = {
    "surfaces": SurfacesExercise,
    "capabilities": CapabilitiesExercise,
    "artifacts": ArtifactsExercise,
    "installs": Installs,
    "dev_reloads": DevReloads,
    "mcp": McpClients,
    "mcp_apps": McpApps,
}


@dataclass(frozen=True)
class DrillOptions:
    seed: int
    duration: float = 60.0
    faults: int = 60
    kinds: tuple[str, ...] = KINDS
    rate: float = 25.0  # Agent operations a second
    user_rate: float = 2.0  # at most this many typed messages a second
    close_every: float = 4.0  # the user closes an instance about this often (seconds)
    ask_rate: float = 1.0  # standard interactions the Agent asks a second
    quiesce_timeout: float = 60.0  # seconds without progress towards quiet (see above)
    exercises: tuple[str, ...] = tuple(EXERCISES)
    data_dir: Path | None = None  # None: a scratch directory, removed after a passing run
    report: Path | None = None
    keep: bool = False

    def replay(self) -> str:
        return (
            f"lineup drill --seed {self.seed} --duration {self.duration:g} "
            f"--faults {self.faults} --kinds {','.join(self.kinds)} --rate {self.rate:g} "
            f"--ask-rate {self.ask_rate:g} --exercises {','.join(self.exercises) or 'none'}"
        )


@dataclass
class Run:
    options: DrillOptions
    data_dir: Path
    faults: list[Fault]
    proxy: LinkProxy
    agent: LoadAgent
    user: ShellUser
    setup: Setup
    exercises: list[Exercise] = field(default_factory=list)
    injector: Injector | None = None
    asker: Asker | None = None
    answerer: Answerer | None = None
    exit_code: int | None = None
    died_early: bool = False
    quiescence_s: float = 0.0
    expiry_wait_s: float = 0.0  # from the load's end to the last expiry due (bound extended)
    endings: dict[str, dict[str, int]] = field(default_factory=dict)  # interaction_endings
    quiet: bool = False
    timings: dict[str, float] = field(default_factory=dict)


async def run_drill(options: DrillOptions) -> tuple[dict[str, Any], list[Invariant]]:
    data_dir = options.data_dir or Path(tempfile.mkdtemp(prefix="lineup-drill-"))
    data_dir.mkdir(parents=True, exist_ok=True)
    runtime_dir = data_dir / "runtime"
    faults = plan(options.seed, options.duration, options.faults, options.kinds)
    appserver_port = free_port()
    appserver_url = f"http://127.0.0.1:{appserver_port}"
    run = Run(
        options,
        data_dir,
        faults,
        LinkProxy(appserver_url, seed=options.seed),
        LoadAgent(appserver_url, AGENT_ID, AGENT_SECRET, options.seed),
        ShellUser("", options.seed),
        Setup(data_dir, runtime_dir, options.seed),
        [EXERCISES[name](options.seed) for name in options.exercises],
    )
    run.asker = Asker(run.agent, options.seed)
    run.answerer = Answerer(run.user, run.asker.plans, options.seed)
    async with trio.open_nursery() as nursery:
        await nursery.start(run.proxy.serve)
        process = await _start_runtime(run, runtime_dir, appserver_port)
        # Until it exits (it reports as it stops), into runtime.out with the drill's clock.
        nursery.start_soon(_keep_output, process.stdout, data_dir / "runtime.out", run)
        try:
            await _drive(run, process, runtime_dir)
        finally:
            if run.injector is not None:
                run.injector.resume_all()
            run.exit_code = await _stop(process)
        nursery.cancel_scope.cancel()
    evidence = Evidence.read(runtime_dir / "devserver.db", runtime_dir / "lineup.db", run.exit_code)
    expected = Expected(
        agent_texts=tuple(k for k, s in run.agent.sent.items() if s.kind == "text"),
        calls=tuple(run.agent.calls()),
        user_messages=tuple(run.user.user_ids()),
        poison=tuple(run.agent.poisoned.items()),
        interactions=tuple(
            (p.call_id, p.kind, p.script, p.bogus) for p in run.asker.plans.values()
        ),
    )
    invariants = check(expected, evidence)
    for exercise in run.exercises:
        invariants += exercise.check(run.setup)
    run.endings = interaction_endings(expected, evidence)
    report = _report(run, invariants)
    return report, invariants


async def _start_runtime(run: Run, runtime_dir: Path, appserver_port: int) -> trio.Process:
    log_file = (run.data_dir / "runtime.log").open("ab")
    command = [
        sys.executable,
        "-m",
        "lineup",
        "run",
        "--data-dir",
        str(runtime_dir),
        "--no-demo-agent",
        "--appserver-port",
        str(appserver_port),
        "--appserver-via",
        run.proxy.url,
        "--dev-app",
        str(DRILL_APP),
    ]
    tail: list[str] = []  # arguments ending in `-- COMMAND…` (an MCP server's) end the line
    for exercise in run.exercises:
        extra = exercise.prepare(run.setup)
        if "--" in extra:
            tail = extra
        else:
            command += extra
    command += tail
    env = {**os.environ, "LINEUP_LOG": os.environ.get("LINEUP_LOG", "WARNING")}
    process = await trio.lowlevel.open_process(
        command, stdout=subprocess.PIPE, stderr=log_file, env=env
    )
    log_file.close()
    assert process.stdout is not None
    buffer = b""
    started = time.monotonic()
    with trio.fail_after(_STARTUP_S):
        while b"open the Shell: " not in buffer:
            chunk = await process.stdout.receive_some()
            if not chunk:
                raise RuntimeError(f"lineup run exited at start; see {run.data_dir}/runtime.log")
            buffer += chunk
    run.timings["runtime_start_s"] = time.monotonic() - started
    line = buffer.split(b"open the Shell: ", 1)[1].split(b"\n", 1)[0]
    run.user.shell_url = line.decode().strip()
    return process


async def _keep_output(stream: Any, path: Path, run: Run) -> None:
    with path.open("a") as out:
        while chunk := await stream.receive_some():
            for line in chunk.decode(errors="replace").splitlines():
                out.write(f"{run.agent.now():9.3f} {line}\n")


async def _drive(run: Run, process: trio.Process, runtime_dir: Path) -> None:
    options = run.options

    def status() -> list[ChildStatus]:
        return list(control_request(runtime_dir, StatusRequest(), StatusReply).children)

    intensity = Intensity()
    async with AgentClient(run.agent.url) as client, trio.open_nursery() as nursery:
        run.injector = Injector(
            status,
            run.proxy,
            lambda variant: run.agent.poison(client, variant),
            max_kills=intensity.max_restarts // 2,
            period=intensity.period,
        )

        async def watch() -> None:
            await process.wait()
            run.died_early = True
            nursery.cancel_scope.cancel()

        nursery.start_soon(watch)
        await _login(client)
        nursery.start_soon(run.agent.read, client)
        nursery.start_soon(run.user.connect_forever)
        assert run.asker is not None
        assert run.answerer is not None
        nursery.start_soon(run.answerer.run)
        run.agent.started = run.user.started = run.injector.started = time.monotonic()
        stage = Stage(run.setup, run.user, run.agent, client, run.agent.url)
        # Beside the load, not in it: an exercise stops asking at the load's end, and what it
        # still waits for is quiescence's business (`unsettled`), so the load ends on time.
        for exercise in run.exercises:
            nursery.start_soon(exercise.drive, stage, options.duration)
        async with trio.open_nursery() as load:
            load.start_soon(run.agent.drive, client, options.duration, options.rate)
            if options.ask_rate > 0:
                load.start_soon(run.asker.drive, options.duration, options.ask_rate, client)
            load.start_soon(run.user.type_messages, options.duration, options.user_rate)
            load.start_soon(run.user.close_now_and_then, options.duration, options.close_every)
            load.start_soon(run.injector.run, run.faults)
        run.injector.resume_all()
        quiet_from = time.monotonic()
        # Questions of the shortest expiry asked near the start of a short run are due after
        # the load: the bound on quiescence counts from when the last of them is.
        run.expiry_wait_s = max(0.0, run.asker.expiries_due() - trio.current_time())
        expiries_due = trio.current_time() + run.expiry_wait_s
        db = runtime_dir / "lineup.db"

        async def busy() -> int:
            left = await trio.to_thread.run_sync(_store_busy, db)
            for exercise in run.exercises:
                left += await exercise.unsettled(stage)
            return left

        run.quiet = await _quiesce(run, busy, expiries_due, options.quiesce_timeout)
        run.quiescence_s = time.monotonic() - quiet_from
        if options.ask_rate > 0:
            # Once all is quiet, not before: until then the load's backlog (under load, a
            # minute of it) still carries questions and the exercises' last inventory changes.
            newest = partial(trio.to_thread.run_sync, _newest_inventory, db)

            async def taken(call_ids: list[str]) -> set[str]:
                return await trio.to_thread.run_sync(_taken_calls, db, call_ids)

            if await run.asker.ask_the_starved(client, STARVED_ASK_S, newest, taken):
                now = trio.current_time()
                quiet = await _quiesce(run, busy, now, options.quiesce_timeout)
                run.quiet = run.quiet and quiet
        nursery.cancel_scope.cancel()


async def _login(client: AgentClient) -> None:
    with trio.fail_after(_STARTUP_S):
        while True:
            try:
                await client.login(AGENT_ID, AGENT_SECRET)
                return
            except Exception:  # the AppServer child is still binding its port
                await trio.sleep(0.05)


async def _quiesce(
    run: Run, store_busy: Callable[[], Awaitable[int]], stall_from: float, stall_s: float
) -> bool:
    """Wait until every call is answered, every typed message arrived, and the store is settled
    (True), or until `stall_s` pass after `stall_from` with no new low in what is left (False).
    `store_busy` reads what the store has not settled (`_store_busy`, in a thread)."""
    typed = set(run.user.user_texts())
    fewest: int | None = None
    progressed = trio.current_time()
    while True:
        await run.user.close_all()
        # The store first: its read may take a while on a busy machine, and what is left is
        # counted as of `now`, after it (a count taken before the read would be stale by then).
        busy = await store_busy()
        left = busy + len(run.agent.unanswered) + len(typed - run.agent.texts_arrived)
        if left == 0:
            return True
        now = trio.current_time()
        if fewest is None or left < fewest:
            fewest, progressed = left, now
        elif now - max(progressed, stall_from) > stall_s:
            log.warning("drill.quiesce_stalled left=%d", left)
            return False
        await trio.sleep(0.25)  # a check a quarter second: cheap, and quiet is not a race


def _newest_inventory(path: Path) -> str | None:
    """The revision of the inventory the runtime last queued for the Agent, if any."""
    connection = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        rows = connection.execute(
            "SELECT json_extract(body, '$.payload.revision') FROM outbox WHERE kind = ?"
            " ORDER BY seq DESC LIMIT 1",
            (INVENTORY,),
        ).fetchall()
    finally:
        connection.close()
    return None if not rows or rows[0][0] is None else str(rows[0][0])


def _taken_calls(path: Path, call_ids: list[str]) -> set[str]:
    """Those of `call_ids` the runtime took: recorded, and not refused for a stale revision."""
    connection = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        rows = connection.execute(
            "SELECT call_id FROM tool_calls WHERE call_id IN (SELECT value FROM json_each(?))"
            " AND NOT (state = 'rejected' AND error_code IS ?)",
            (json.dumps(call_ids), STALE),
        ).fetchall()
    finally:
        connection.close()
    return {str(call_id) for (call_id,) in rows}


def _store_busy(path: Path) -> int:
    """Deliveries, outbox rows, calls and interactions the store has not settled yet."""
    connection = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        final = sorted(TERMINAL_STATES)
        ((busy,),) = connection.execute(
            "SELECT (SELECT count(*) FROM app_inbox WHERE acked_at IS NULL)"
            " + (SELECT count(*) FROM outbox WHERE acked_at IS NULL)"
            " + (SELECT count(*) FROM tool_calls WHERE state NOT IN"
            f" ({', '.join('?' * len(final))}))"
            " + (SELECT count(*) FROM interactions WHERE state IN"
            " ('pending', 'presented', 'submitted'))",
            final,
        ).fetchall()
    finally:
        connection.close()
    assert isinstance(busy, int)  # a sum of counts
    return busy


async def _stop(process: trio.Process) -> int | None:
    if process.returncode is not None:
        return process.returncode
    process.send_signal(signal.SIGTERM)
    with trio.move_on_after(_STOP_S):
        return await process.wait()
    process.kill()
    await process.wait()
    return None


def _report(run: Run, invariants: list[Invariant]) -> dict[str, Any]:
    assert run.injector is not None
    done = run.injector.done
    recovery = [r.recovery_ms for r in done if r.recovery_ms is not None]
    by_target: dict[str, list[float]] = {}
    for record in done:
        if record.recovery_ms is not None:
            by_target.setdefault(record.target, []).append(record.recovery_ms)
    injected = [r for r in done if r.skipped is None]
    by_kind: dict[str, int] = {}
    for record in injected:
        by_kind[record.fault.kind] = by_kind.get(record.fault.kind, 0) + 1
    finished = [t for t, m in run.agent.received if m.get("type") in TERMINAL_TYPES]
    options = run.options
    report: dict[str, Any] = {
        "seed": options.seed,
        "replay": options.replay(),
        "passed": all(rule.passed for rule in invariants),
        "duration_s": options.duration,
        "quiescence_s": run.quiescence_s,
        "expiry_wait_s": run.expiry_wait_s,
        "quiesced": run.quiet,
        "runtime_died_early": run.died_early,
        "runtime_exit_code": run.exit_code,
        "data_dir": str(run.data_dir),
        "faults": {
            "planned": len(run.faults),
            "injected": len(injected),
            "skipped": len(done) - len(injected),
            "by_kind": by_kind,
            "kills_by_target": {
                name: sum(1 for r in injected if r.fault.kind == "kill" and r.target == name)
                for name in sorted({r.target for r in injected if r.fault.kind == "kill"})
            },
            "timeline": [
                {
                    "at": round(r.fired_at, 3),
                    "kind": r.fault.kind,
                    "target": r.target,
                    "duration": round(r.fault.duration, 3),
                    "recovery_ms": None if r.recovery_ms is None else round(r.recovery_ms, 2),
                }
                for r in injected
            ],
        },
        "operations": {
            "tool_calls": len(run.agent.calls()),
            "tool_calls_by_tool": _count(
                s.kind for s in run.agent.sent.values() if s.kind != "text"
            ),
            "agent_texts": sum(1 for s in run.agent.sent.values() if s.kind == "text"),
            "user_messages": len(run.user.messages),
            "closes": run.user.closes,
            "shell_reconnects": run.user.reconnects,
            "user_resubmits": run.user.resubmits,
            "user_message_typed_to_shown_ms": {
                "p50": _ms(percentile(run.user.to_shown_s, 0.5)),
                "p99": _ms(percentile(run.user.to_shown_s, 0.99)),
            },
            "terminal_codes": _count(
                str(m["payload"].get("code") or "completed")
                for _, m in run.agent.received
                if m.get("type") in TERMINAL_TYPES
            ),
            "interactions": _interactions(run),
            "proxy": {k: v for k, v in vars(run.proxy.counts).items() if k != "by_second"},
        },
        "recovery_ms": {
            "count": len(recovery),
            "p50": percentile(recovery, 0.5),
            "p99": percentile(recovery, 0.99),
            "max": max(recovery, default=None),
            "by_target": {
                name: {"count": len(v), "p50": percentile(v, 0.5), "max": max(v)}
                for name, v in sorted(by_target.items())
            },
        },
        "timings": run.timings,
        "exercises": {exercise.name: exercise.report() for exercise in run.exercises},
        "invariants": [vars(rule) for rule in invariants],
    }
    path = options.report or Path("drill-results") / f"drill-{options.seed}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n")
    path.with_suffix(".svg").write_text(timeline_svg(report, finished))
    report["report_path"] = str(path)
    return report


def _interactions(run: Run) -> dict[str, Any]:
    assert run.asker is not None
    assert run.answerer is not None
    plans = run.asker.plans.values()
    return {
        "asked": len(run.asker.plans),
        "by_kind": _count(p.kind for p in plans),
        "by_script": _count(p.script for p in plans),
        "in_sub_session": sum(1 for p in plans if p.app_session_id and not p.bogus),
        "bogus_sub_session": sum(1 for p in plans if p.bogus),
        "dismisses": len(run.asker.dismissed),
        "answered_by_user": run.answerer.answered,
        "ended_by_script": run.endings,
        "sub_sessions_seen": len(run.agent.sessions),
        "asked_after_the_load": run.asker.starved,
    }


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 1)


def _count(values: Any) -> dict[str, int]:
    return dict(sorted(Counter(values).items()))
