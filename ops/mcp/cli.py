"""`lineup mcp`: serve the Agent's side of a LineUp runtime to any MCP client.

    lineup mcp [--data-dir DIR | --appserver URL] [--agent-id ID] [--agent-secret S]
               [--conversation-id C] [--http PORT] [--print-config]

`--data-dir DIR` finds the embedded AppServer of a running `lineup run --no-demo-agent` with
that data dir (through its status); `--appserver URL` names one directly. The Agent's secret
defaults to `$LINEUP_AGENT_SECRET`, else the embedded AppServer's. stdio by default (the MCP
client starts this command); `--http PORT` serves streamable HTTP at
`http://127.0.0.1:PORT/mcp` instead (0: any free port; the URL is printed on stderr).
`--print-config` prints the `mcpServers` entry a desktop MCP host takes, and exits.

Exit status: 0 when the client hangs up, 1 when the AppServer cannot be found or refuses the
login, 2 for bad usage.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from functools import partial
from pathlib import Path
from typing import Final

import trio

from lineup._logs import configure_logs
from lineup.ops.agent import AgentClient, AppServerError
from lineup.ops.agent._runtime import RuntimeUnreachable, embedded_appserver_url

from ._events import MemoryEventStore
from ._server import Link, McpBridge

__all__ = ["config_snippet", "main"]

DEFAULT_AGENT_ID: Final = "demo-agent"  # the embedded AppServer's (`lineup run`'s defaults)
DEFAULT_AGENT_SECRET: Final = "demo-secret"
SECRET_ENV: Final = "LINEUP_AGENT_SECRET"
EXIT_FAILED: Final = 1
EXIT_USAGE: Final = 2
RETRY_INTERVAL_MS: Final = 1000  # told to a client whose stream drops: reconnect after it


class NotFound(Exception):
    """No AppServer to connect to: the message says why."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lineup mcp",
        description="Serve a LineUp runtime's Agent side to an MCP client.",
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--data-dir", type=Path, default=None, help="a running `lineup run`'s")
    where.add_argument("--appserver", metavar="URL", default=None)
    parser.add_argument("--agent-id", default=DEFAULT_AGENT_ID)
    parser.add_argument(
        "--agent-secret",
        default=None,
        help=f"(default: ${SECRET_ENV}, else the embedded AppServer's)",
    )
    parser.add_argument("--conversation-id", default=None)
    parser.add_argument("--http", type=int, metavar="PORT", default=None)
    parser.add_argument("--print-config", action="store_true")
    return parser


def _data_dir(args: argparse.Namespace) -> Path:
    if args.data_dir is not None:
        return Path(args.data_dir).absolute()
    from lineup.sdk.trust import default_data_dir

    return default_data_dir()


def config_snippet(args: argparse.Namespace, python: str = sys.executable) -> dict[str, object]:
    """The `mcpServers` entry for this command: the same interpreter, `-m lineup mcp` and how
    to reach the AppServer. A secret other than the default travels in `env`, never in args
    (argv is visible to every local user)."""
    command = ["-m", "lineup", "mcp"]
    if args.appserver is not None:
        command += ["--appserver", args.appserver]
    else:
        command += ["--data-dir", str(_data_dir(args))]
    if args.agent_id != DEFAULT_AGENT_ID:
        command += ["--agent-id", args.agent_id]
    if args.conversation_id is not None:
        command += ["--conversation-id", args.conversation_id]
    server: dict[str, object] = {"command": python, "args": command}
    secret = _secret(args)
    if secret != DEFAULT_AGENT_SECRET:
        server["env"] = {SECRET_ENV: secret}
    return {"mcpServers": {"lineup": server}}


def _secret(args: argparse.Namespace) -> str:
    return str(args.agent_secret or os.environ.get(SECRET_ENV) or DEFAULT_AGENT_SECRET)


def _appserver_url(args: argparse.Namespace) -> str:
    if args.appserver is not None:
        return str(args.appserver)
    try:
        return embedded_appserver_url(_data_dir(args))
    except RuntimeUnreachable as exc:
        raise NotFound(str(exc)) from None


async def _serve(link: Link, http_port: int | None) -> None:
    async with AgentClient(link.appserver_url) as client, trio.open_nursery() as nursery:
        bridge = McpBridge(link, client)
        await nursery.start(bridge.run)
        if http_port is None:
            from mcp.server.stdio import stdio_server

            async with stdio_server() as (read, write):
                await bridge.server.run(read, write, bridge.server.create_initialization_options())
        else:
            await _serve_http(bridge, http_port)
        nursery.cancel_scope.cancel()


async def _serve_http(bridge: McpBridge, port: int) -> None:
    import hypercorn.config
    import hypercorn.trio

    config = hypercorn.config.Config()
    config.bind = [f"127.0.0.1:{port}"]  # loopback only
    config.accesslog = None
    config.errorlog = logging.getLogger("lineup.mcp.http")
    # The event store: a client whose stream drops reconnects with Last-Event-ID and resumes.
    app = bridge.server.streamable_http_app(
        host="127.0.0.1", event_store=MemoryEventStore(), retry_interval=RETRY_INTERVAL_MS
    )
    async with trio.open_nursery() as nursery:
        binds = await nursery.start(partial(hypercorn.trio.serve, app, config))  # type: ignore[arg-type]
        for bind in binds:
            print(f"lineup mcp: serving {bind}/mcp", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    """Run `lineup mcp` with `argv` (default: `sys.argv[1:]`); returns the exit status."""
    args = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    if args.print_config:
        print(json.dumps(config_snippet(args), indent=2))
        return 0
    # stdout is the MCP channel on stdio: the logs go to stderr.
    configure_logs("mcp")
    if args.http is not None and not 0 <= args.http <= 65535:
        print("lineup mcp: error: --http takes a port", file=sys.stderr)
        return EXIT_USAGE
    try:
        url = _appserver_url(args)
    except NotFound as exc:
        print(f"lineup mcp: error: {exc}", file=sys.stderr)
        return EXIT_FAILED
    link = Link(url, args.agent_id, _secret(args), args.conversation_id)
    try:
        trio.run(_serve, link, args.http)
    except AppServerError as exc:
        print(f"lineup mcp: error: the AppServer refused: {exc.code}", file=sys.stderr)
        return EXIT_FAILED
    except KeyboardInterrupt:
        return 0
    return 0
