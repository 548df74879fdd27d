"""A small MCP server of our own (the official SDK's `MCPServer`), run over stdio by the tests
as an MCP app (`lineup run --dev-mcp -- python server.py`). Not LineUp code: it imports only
the `mcp` SDK and the standard library, as any server a user brings would.

Its tools: `add` (structured output), `fail` (an `isError` result), `slow` (progress, a log
line, then waits until cancelled), `nap` (progress, then a sleep), `probe` (what the sandbox
lets it reach: a path, the network), `ask_model` (sampling, which LineUp refuses), `grow` (adds
`extra`, then `notifications/tools/list_changed`), `getTime` (a name LineUp's rule refuses as
written), `ask` (`elicitation/create` with the form it is given, answering what the client
said), `ask_url` (a URL-mode elicitation), `client_elicitation` (the elicitation capability the
client declared), `garble` (a line that is not JSON-RPC on its stdout, then waits). `slow`
writes `slow cancelled <request id>` on stderr (the app's log) when the client cancels it
(`notifications/cancelled`): the proof that the cancellation reached it.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("Our Test Server")
# The transport's stdout, kept before the SDK diverts fd 1 to stderr (its guard against stray
# prints): `garble` writes on it what a broken server would.
WIRE = os.dup(1)


@server.tool(description="Add two integers.")
def add(a: int, b: int) -> int:
    return a + b


@server.tool(description="Always fails, as a tool result (isError).")
def fail(reason: str) -> str:
    raise ValueError(reason)


@server.tool(description="Report progress, log a line, then wait until cancelled.")
async def slow(steps: int, ctx: Context) -> str:
    await ctx.info("slow started")
    for step in range(steps):
        await ctx.report_progress(step + 1, steps)
    try:
        await anyio.sleep_forever()
    except anyio.get_cancelled_exc_class():
        # Only the client's `notifications/cancelled` cancels a handler of a live session.
        print(f"slow cancelled {ctx.request_id}", file=sys.stderr, flush=True)
        raise
    return "never"


@server.tool(description="Report that it started, sleep `seconds`, then answer.")
async def nap(seconds: float, ctx: Context) -> str:
    await ctx.report_progress(0, 1)
    await anyio.sleep(seconds)
    return "rested"


@server.tool(description="What this process may reach: read a path, open a TCP socket.")
def probe(path: str, host: str = "", port: int = 0) -> dict[str, str]:
    found: dict[str, str] = {"pid": str(os.getpid()), "cwd": os.getcwd()}
    try:
        with open(path, "rb") as f:
            f.read(1)
        found["read"] = "ok"
    except OSError as exc:
        found["read"] = type(exc).__name__
    if port:
        try:
            with socket.create_connection((host, port), timeout=2):
                found["connect"] = "ok"
        except OSError as exc:
            found["connect"] = type(exc).__name__
    return found


@server.tool(description="Ask the client's model (sampling); answer what the client said.")
async def ask_model(question: str, ctx: Context) -> str:
    text = types.TextContent(type="text", text=question)
    message = types.SamplingMessage(role="user", content=text)
    try:
        await ctx.session.create_message([message], max_tokens=10)
    except Exception as exc:
        return f"refused: {exc}"
    return "answered"


def extra(word: str) -> str:
    return word.upper()


@server.tool(description="Add the tool `extra`, and say the tools changed.")
async def grow(ctx: Context) -> str:
    server.add_tool(extra, description="Added by `grow`.")
    await ctx.session.send_tool_list_changed()
    return "grown"


@server.tool(description="Ask the user the form `schema` (elicitation); answer what came back.")
async def ask(message: str, schema: dict[str, Any], ctx: Context, hold: bool = False) -> str:
    # `hold`: the question outlives a cancelled call (the server never withdraws it), as a
    # server whose handler does not pass its cancellation on to its own requests.
    with anyio.CancelScope(shield=hold):
        result = await ctx.session.elicit_form(message, schema, related_request_id=ctx.request_id)
    return json.dumps(result.model_dump(mode="json", exclude_none=True), sort_keys=True)


@server.tool(description="Ask the client to send the user to a URL (URL-mode elicitation).")
async def ask_url(ctx: Context) -> str:
    try:
        result = await ctx.session.elicit_url(
            "Sign in", "https://example.com/", "e-1", related_request_id=ctx.request_id
        )
    except Exception as exc:
        return f"refused: {exc}"
    return str(result.action)


@server.tool(description="The elicitation capability the client declared.")
def client_elicitation(ctx: Context) -> str:
    caps = ctx.session.client_capabilities
    found = caps.elicitation if caps is not None else None
    dumped = None if found is None else found.model_dump(mode="json", exclude_none=True)
    return json.dumps(dumped)


@server.tool(description="Write a line that is not JSON-RPC on stdout, then wait.")
async def garble() -> str:
    os.write(WIRE, b"this is not json-rpc\n")
    await anyio.sleep_forever()
    return "never"


@server.tool(name="getTime", description="A camelCase name.")
def get_time() -> str:
    return "12:00"


if __name__ == "__main__":
    print("server starting", file=sys.stderr)
    server.run("stdio")
