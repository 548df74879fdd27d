"""`lineup run --dev-mcp -- COMMAND ARGS…`: an MCP server under development, as an unsigned app.

Theory of operation
-------------------
The app's manifest (`lineup.app.v1`, kind `mcp`) is written from what the server says of itself,
never typed by hand: `dev_mcp` runs this module as a throwaway process (`python -m
lineup.supervisor._mcp_probe`), which confines itself exactly as the app's process will be
(`_sandbox`, profile `mcp`: Landlock, seccomp, a network namespace of its own, so offline;
its data dir a temporary one, not the runtime's), starts the server from its folder, asks
`initialize` and every page of `tools/list`, prints them as one JSON object and exits, within
PROBE_TIMEOUT. The parent maps them (`lineup.sdk.mcp_server`) into the manifest, written under
`<data dir>/dev-mcp/<scope>/manifest.json`, and returns the registry entry focus loads, marked
`dev`. The scope is the server's name (`serverInfo.name`, `scope_of`).

The folder is `--dev-mcp DIR`'s (default: the directory `lineup run` is started in): the server
runs there, and may read and execute what is beneath it, so it may not be the user's home or a
folder above it, nor hold the data dir.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Final

__all__ = ["PROBE_TIMEOUT", "ProbeFailed", "dev_mcp"]

PROBE_TIMEOUT: Final = 60.0
MAX_OUTPUT: Final = 4 * 1024 * 1024
_TARGET: Final = "lineup.sdk._mcp_host:McpAppHost"  # what the app's process preloads


class ProbeFailed(ValueError):
    """The server could not be listed: the message says why (one line for the terminal)."""


def dev_mcp(folder: Path, command: list[str], data_dir: Path) -> dict[str, str]:
    """The registry entry of the MCP server `command` run from `folder` (the module's
    docstring), its manifest written from the server's own `tools/list`. Raises ProbeFailed."""
    from lineup.sdk.manifest import ManifestInvalid, manifest_json
    from lineup.sdk.mcp_server import manifest_of, scope_of, tools_of

    folder = folder.resolve()
    home = Path.home().resolve()
    if folder == home or home.is_relative_to(folder) or data_dir.resolve().is_relative_to(folder):
        raise ProbeFailed(
            f"{folder}: run `lineup run --dev-mcp` from the server's own folder "
            "(not your home, nor a folder holding it or the data dir)"
        )
    if not command:
        raise ProbeFailed("--dev-mcp needs the server's command after `--`")
    program = shutil.which(command[0])
    if program is None:
        raise ProbeFailed(f"{command[0]}: not found on PATH")
    listed = _probe(folder, [program, *command[1:]])
    info = listed.get("server") or {}
    scope = scope_of(str(info.get("name") or folder.name))
    tools = tools_of(scope, listed.get("tools") or [])
    try:
        manifest = manifest_of(
            scope, str(info.get("version") or "0"), info.get("title"), command, tools
        )
    except ManifestInvalid as exc:
        raise ProbeFailed(f"{scope}: {exc.reason} {exc.path}".rstrip()) from None
    where = data_dir / "dev-mcp" / scope
    where.mkdir(mode=0o700, parents=True, exist_ok=True)
    (where / "manifest.json").write_text(manifest_json(manifest))
    entry = {
        "app_scope": scope,
        "manifest": str(where / "manifest.json"),
        "entry": "",
        "app_path": str(folder),
        "title": f"{manifest.title or scope} (dev)",
        "dev": "true",
    }
    if tools.refused:
        entry["refused"] = " ".join(f"{name}:{reason}" for name, reason in tools.refused)
    return entry


def _probe(folder: Path, command: list[str]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="lineup-mcp-probe-") as scratch:
        request = {"folder": str(folder), "command": command, "data_dir": scratch}
        try:
            done = subprocess.run(
                [sys.executable, "-m", "lineup.supervisor._mcp_probe"],
                input=json.dumps(request),
                capture_output=True,
                text=True,
                timeout=PROBE_TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise ProbeFailed(f"{command[0]}: no tools/list within {PROBE_TIMEOUT:.0f}s") from None
    if done.returncode != 0 or len(done.stdout) > MAX_OUTPUT:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1][:300]
        raise ProbeFailed(f"{command[0]}: the server did not list its tools: {last}")
    try:
        found = json.loads(done.stdout)
    except ValueError:
        raise ProbeFailed(f"{command[0]}: the probe's answer is not JSON") from None
    if not isinstance(found, dict):
        raise ProbeFailed(f"{command[0]}: the probe's answer is not an object")
    return found


# ---------------------------------------------------------------------- the probe itself


def _main() -> None:
    request = json.loads(sys.stdin.read())
    folder, command = str(request["folder"]), [str(part) for part in request["command"]]
    from . import _sandbox

    _sandbox.prepare_child(
        {
            "target": _TARGET,
            "data_dir": request["data_dir"],
            "config": {
                "sandbox": {
                    "profile": "mcp",
                    "app_scope": "probe",
                    "exec_paths": [command[0], folder],
                }
            },
        }
    )
    import trio

    listed = trio.run(_list, folder, command)
    sys.stdout.write(json.dumps(listed))  # a pipe (the sandbox sends only a tty to /dev/null)


async def _list(folder: str, command: list[str]) -> dict[str, Any]:
    import trio
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from lineup.sdk._mcp_elicit import LineUpClientSession, decline_all
    from lineup.sdk._mcp_host import list_tools

    params = StdioServerParameters(command=command[0], args=command[1:], cwd=folder)
    with trio.fail_after(PROBE_TIMEOUT - 5):
        # The adapter's capabilities: a server may offer a tool only to a client that can
        # elicit (`lineup.sdk._mcp_elicit`), and the manifest must list what the app serves.
        async with (
            stdio_client(params) as (read, write),
            LineUpClientSession(read, write, elicitation_callback=decline_all) as session,
        ):
            init = await session.initialize()
            tools = await list_tools(session)
    info = init.server_info
    return {
        "server": {"name": info.name, "version": info.version, "title": info.title},
        "tools": tools,
    }


if __name__ == "__main__":
    _main()
