"""The peer a user would pick instead of LineUp: a Ray actor, measured in the same bench run.

Ray comes only from the `bench` extra, and nothing imports it — not the runtime, not even the
bench process: `measure_ray` runs this module as a child process
(`python -m lineup.ops.bench._ray`), which imports ray by name and writes its samples to a JSON
file. So ray's threads and signal handlers never meet the bench's fork()s, its log noise goes
to a captured pipe, and a missing or broken ray becomes a reason in the report, not a crash.

The child mirrors the LineUp measurements it stands beside: the same ~300-byte echo as the bus
round trip, the same warm-up, 8 calls in flight for the rate, and a SIGKILL of the actor's
worker process timed until a call answers from the new process — twice, because Ray answers a
call sent to the dead worker only after it notices the death (a second or two), well after the
replacement is up: once as the earliest of calls sent every 10 ms (the restart itself), once as
a caller that calls at once and again on each error sees it. `ray.init` and the actor's first
start are timed apart (`init_seconds`) and are in no figure.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RAY_REQUIREMENT = "the `bench` extra (make bench installs it)"
CHILD_TIMEOUT = 600.0  # seconds for the whole child run; a hung ray is reported, not waited on
KILL_DEADLINE = 60.0  # seconds for one restarted actor to answer
CALL_TIMEOUT = 30.0  # seconds for one call that is not around a kill
POLL_INTERVAL = 0.01  # seconds between calls while the actor restarts
WARM_UP = 200
PAD = "x" * 180  # as the bus round trip's PingRequest.pad


@dataclass(frozen=True)
class RayRun:
    """Samples from one child run, or why there are none (`reason`)."""

    available: bool
    reason: str = ""
    version: str = ""
    init_seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)  # seconds, one call at a time
    rate: float = 0.0  # calls/s with `concurrency` in flight
    # seconds from SIGKILL to an answer: the earliest of calls sent every POLL_INTERVAL, and
    # a caller's that calls at once and again on each error
    restarts_polled: list[float] = field(default_factory=list)
    restarts_retried: list[float] = field(default_factory=list)


def measure_ray(samples: int, burst: int, kills: int, concurrency: int = 8) -> RayRun:
    """Run the Ray measurements in a child process. Never raises for ray's sake."""
    # ray's session files and sockets go here too, and leave with it
    with tempfile.TemporaryDirectory(prefix="lu-ray-", ignore_cleanup_errors=True) as tmp:
        result = Path(tmp) / "result.json"
        command = [
            sys.executable,
            "-m",
            "lineup.ops.bench._ray",
            f"--samples={samples}",
            f"--burst={burst}",
            f"--kills={kills}",
            f"--concurrency={concurrency}",
            f"--result={result}",
            f"--temp-dir={tmp}",
        ]
        # Ray's usage statistics would try to phone home: this machine is kept local.
        env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
        # Its own session, so a hung run is ended with ray's processes, by our child's group id.
        process = subprocess.Popen(
            command,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            _, stderr = process.communicate(timeout=CHILD_TIMEOUT)
        except subprocess.TimeoutExpired:
            _end_group(process.pid)
            process.communicate()
            return RayRun(False, reason=f"the Ray run took over {CHILD_TIMEOUT:.0f} s")
        _end_group(process.pid)  # whatever of ray's a failed shutdown left behind
        if result.exists():
            return RayRun(**json.loads(result.read_text()))
        last = stderr.strip().splitlines()[-1:] or ["no output"]
        return RayRun(False, reason=f"the Ray run failed (exit {process.returncode}): {last[0]}")


def _end_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass  # the group is empty: ray shut down cleanly


# ------------------------------------------------------------------------------ the child side


class _Echo:
    """The trivial actor: echoes what the bus round trip echoes, and tells its process id."""

    def echo(self, n: int, pad: str) -> tuple[int, str]:
        return n, pad

    def pid(self) -> int:
        return os.getpid()


def _run(ray: Any, args: argparse.Namespace) -> dict[str, Any]:
    t0 = time.perf_counter()
    ray.init(
        address="local",  # a cluster of its own, never one already running
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        logging_level=logging.ERROR,
        _node_ip_address="127.0.0.1",
        _temp_dir=args.temp_dir,
    )
    try:
        actor = ray.remote(max_restarts=-1, max_task_retries=0)(_Echo).remote()
        for n in range(WARM_UP):  # the worker's start and first calls are not in any figure
            ray.get(actor.echo.remote(n, PAD), timeout=CALL_TIMEOUT)
        init_seconds = time.perf_counter() - t0

        latencies = []
        for n in range(args.samples):
            started = time.perf_counter()
            ray.get(actor.echo.remote(n, PAD), timeout=CALL_TIMEOUT)
            latencies.append(time.perf_counter() - started)

        started = time.perf_counter()
        pending = [actor.echo.remote(n, PAD) for n in range(min(args.concurrency, args.burst))]
        sent = len(pending)
        while pending:
            ready, pending = ray.wait(pending, num_returns=1, timeout=CALL_TIMEOUT)
            if not ready:
                raise TimeoutError("a call in the burst took too long")
            ray.get(ready)
            if sent < args.burst:
                pending.append(actor.echo.remote(sent, PAD))
                sent += 1
        rate = args.burst / (time.perf_counter() - started)

        polled = [_restart_polled(ray, actor) for _ in range(args.kills)]
        retried = [_restart_retried(ray, actor) for _ in range(args.kills)]
        return {
            "available": True,
            "version": ray.__version__,
            "init_seconds": init_seconds,
            "latencies": latencies,
            "rate": rate,
            "restarts_polled": polled,
            "restarts_retried": retried,
        }
    finally:
        ray.shutdown()


def _restart_polled(ray: Any, actor: Any) -> float:
    """SIGKILL the actor's worker; seconds until the earliest of calls, one sent every
    POLL_INTERVAL, answers from its replacement. Ray's restart itself, without its wait on
    calls sent to the dead worker."""
    old = ray.get(actor.pid.remote(), timeout=CALL_TIMEOUT)
    started = time.perf_counter()
    os.kill(old, signal.SIGKILL)
    pending: list[Any] = []
    try:
        while time.perf_counter() - started < KILL_DEADLINE:
            pending.append(actor.pid.remote())
            ready, pending = ray.wait(pending, num_returns=1, timeout=POLL_INTERVAL)
            for ref in ready:
                try:
                    if ray.get(ref) != old:
                        return time.perf_counter() - started
                except ray.exceptions.RayActorError:
                    pass  # sent to the dead worker
        raise TimeoutError(f"the Ray actor did not answer within {KILL_DEADLINE:.0f} s of SIGKILL")
    finally:  # the next kill starts with no call of this one in flight
        for ref in pending:
            try:
                ray.get(ref, timeout=CALL_TIMEOUT)
            except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
                pass


def _restart_retried(ray: Any, actor: Any) -> float:
    """SIGKILL the actor's worker; seconds until a caller that calls at once and calls again
    on each error has an answer from the replacement: what code using the actor sees."""
    old = ray.get(actor.pid.remote(), timeout=CALL_TIMEOUT)
    started = time.perf_counter()
    os.kill(old, signal.SIGKILL)
    deadline = started + KILL_DEADLINE
    while (left := deadline - time.perf_counter()) > 0:
        try:
            if ray.get(actor.pid.remote(), timeout=left) != old:
                return time.perf_counter() - started
        except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
            continue  # the call met the dead worker, or the restart is not done yet
    raise TimeoutError(f"the Ray actor did not answer within {KILL_DEADLINE:.0f} s of SIGKILL")


def main() -> None:
    parser = argparse.ArgumentParser(prog="lineup-bench-ray")
    for name in ("samples", "burst", "kills", "concurrency"):
        parser.add_argument(f"--{name}", type=int, required=True)
    parser.add_argument("--result", type=Path, required=True)
    parser.add_argument("--temp-dir", required=True)
    args = parser.parse_args()
    try:
        ray = importlib.import_module("ray")  # by name: mypy and the runtime never see ray
    except ImportError as exc:
        out: dict[str, Any] = {"available": False, "reason": f"{exc} — needs {RAY_REQUIREMENT}"}
    else:
        try:
            out = _run(ray, args)
        except Exception as exc:  # any failure is the report's to state, not the bench's to crash
            out = {"available": False, "reason": f"ray failed: {type(exc).__name__}: {exc}"}
    args.result.write_text(json.dumps(out))


if __name__ == "__main__":
    main()
