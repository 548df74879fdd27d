"""`lineup devserver`: run the reference AppServer in the foreground.

    lineup devserver [--host 127.0.0.1] [--port 8787] [--db PATH]
                     [--user NAME:PASSWORD ...] [--agent-id ID] [--agent-secret S]
                     [--conversation-id C] [--fail-rate F] [--delay-ms D] [--seed N]

Defaults: one user `demo` with password `demo` (user_id `user-demo`) in conversation
`conv-demo` with the agent `demo-agent`, whose secret is `demo-secret`; port 8787 on
127.0.0.1; the database `$XDG_DATA_HOME/lineup-devserver/devserver.db`
(`~/.local/share/lineup-devserver/devserver.db`). Each `--user NAME:PASSWORD` gets the user_id
`user-NAME`; the first one talks in `--conversation-id`, every further one in `conv-NAME`. The
agent serves all of them. `--port 0` picks a free port.

It prints one line, `lineup devserver: listening on http://HOST:PORT`, once it accepts
connections, and runs until SIGINT or SIGTERM (exit status 0). Exit status 1 if it cannot open
its database or bind its address, 2 for bad usage.

Fault injection for drills (default off): `--fail-rate F` answers that fraction of POST calls
with 503 `{"error":"unavailable"}` before anything is stored (a PRNG seeded with `--seed`);
`--delay-ms D` adds D milliseconds of latency to every call but `/healthz`.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from functools import partial
from pathlib import Path

import trio

from lineup._logs import configure_logs

from ._config import (
    DEFAULT_AGENT_ID,
    DEFAULT_AGENT_SECRET,
    DEFAULT_CONVERSATION_ID,
    DEFAULT_HOST,
    DEFAULT_PASSWORD,
    DEFAULT_PORT,
    DEFAULT_USERNAME,
    AgentAccount,
    DevServerConfig,
    UserAccount,
)
from ._db import StoreError
from ._serve import serve

__all__ = ["default_db_path", "main"]

EXIT_FAILED = 1
EXIT_INTERRUPTED = 130


def default_db_path() -> Path:
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "lineup-devserver" / "devserver.db"


def _user(raw: str) -> tuple[str, str]:
    name, sep, password = raw.partition(":")
    if not sep or not name or not password:
        raise argparse.ArgumentTypeError("expected NAME:PASSWORD")
    return name, password


def _fraction(raw: str) -> float:
    value = float(raw)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError("expected a fraction within [0, 1]")
    return value


def _non_negative(raw: str) -> int:
    value = int(raw)
    if value < 0:
        raise argparse.ArgumentTypeError("expected a number >= 0")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lineup devserver",
        description=(
            "Run the reference AppServer in the foreground (its HTTP protocol: "
            "docs/agent-protocol.md)."
        ),
    )
    parser.add_argument("--host", default=DEFAULT_HOST)
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="0 picks a free port")
    parser.add_argument(
        "--db", type=Path, default=None, metavar="PATH", help="the server's SQLite file"
    )
    parser.add_argument(
        "--user",
        type=_user,
        action="append",
        default=None,
        metavar="NAME:PASSWORD",
        help=f"a user who may log in (repeatable; default {DEFAULT_USERNAME}:{DEFAULT_PASSWORD})",
    )
    parser.add_argument("--agent-id", default=DEFAULT_AGENT_ID)
    parser.add_argument("--agent-secret", default=DEFAULT_AGENT_SECRET)
    parser.add_argument("--conversation-id", default=DEFAULT_CONVERSATION_ID)
    parser.add_argument(
        "--fail-rate",
        type=_fraction,
        default=0.0,
        metavar="F",
        help="answer this fraction of POST calls with 503 before storing anything (default 0)",
    )
    parser.add_argument(
        "--delay-ms",
        type=_non_negative,
        default=0,
        metavar="D",
        help="add D ms of latency to every call but /healthz (default 0)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seeds --fail-rate")
    return parser


def config_from_args(args: argparse.Namespace) -> DevServerConfig:
    users_raw: list[tuple[str, str]] = args.user or [(DEFAULT_USERNAME, DEFAULT_PASSWORD)]
    users = tuple(
        UserAccount(
            username=name,
            password=password,
            user_id=f"user-{name}",
            conversation_id=args.conversation_id if index == 0 else f"conv-{name}",
            agent_id=args.agent_id,
        )
        for index, (name, password) in enumerate(users_raw)
    )
    return DevServerConfig(
        host=args.host,
        port=args.port,
        db_path=(args.db or default_db_path()).absolute(),
        users=users,
        agents=(AgentAccount(args.agent_id, args.agent_secret),),
        fail_rate=args.fail_rate,
        delay_ms=args.delay_ms,
        seed=args.seed,
    )


async def _run(config: DevServerConfig) -> None:
    shutdown = trio.Event()
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async with trio.open_nursery() as nursery:
            url = await nursery.start(partial(serve, config, shutdown=shutdown))
            print(f"lineup devserver: listening on {url}", flush=True)
            async for _ in signals:
                shutdown.set()
                break


def main(argv: list[str] | None = None) -> int:
    """Run `lineup devserver` with `argv` (default: `sys.argv[1:]`); returns the exit status."""
    args = _parser().parse_args(argv)
    configure_logs("devserver")
    config = config_from_args(args)
    try:
        trio.run(_run, config)
    except BaseException as group:
        exc = _unwrap(group)
        if isinstance(exc, KeyboardInterrupt):
            return EXIT_INTERRUPTED
        if isinstance(exc, StoreError):
            print(f"lineup devserver: cannot open the database ({exc})", file=sys.stderr)
            return EXIT_FAILED
        if isinstance(exc, OSError):
            reason = exc.strerror or type(exc).__name__
            print(
                f"lineup devserver: cannot listen on {config.host}:{config.port} ({reason})",
                file=sys.stderr,
            )
            return EXIT_FAILED
        raise
    return 0


def _unwrap(exc: BaseException) -> BaseException:
    """The one exception inside nested single-member groups (trio's nurseries wrap)."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc
