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
`dev`. The scope is the server's name (`serverInfo.name`, `scope_of`). `lineup app pack-mcp`
(`_pack_mcp`) lists a server the same way, by the same function (`probe_app`), before it
signs it.

Its UI (MCP Apps): the probe also reads, with `resources/list` and `resources/read`, each
`ui://` resource a tool links to, so the manifest declares it as a Surface entrypoint and its
HTML is written beside the manifest, in `web/` (`lineup.sdk.mcp_ui`): the UI that runs is the
one read here, offline, never one served later. `probe_app` is that, for any folder and
command (`lineup app pack-mcp` packs the server's folder with the `web/` `write_documents`
wrote into it); a UI left out, like a tool, comes with its reason (`McpApp.ui_refused`),
printed by `lineup run`.

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
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from lineup.sdk.manifest import Manifest

__all__ = [
    "PROBE_TIMEOUT",
    "McpApp",
    "ProbeFailed",
    "dev_mcp",
    "probe_app",
    "write_app",
    "write_documents",
]

PROBE_TIMEOUT: Final = 60.0
MAX_LISTING: Final = 4 * 1024 * 1024  # the tools and resources the probe prints, as JSON
MAX_RESOURCE_PAGES: Final = 16
_TARGET: Final = "lineup.sdk._mcp_host:McpAppHost"  # what the app's process preloads


class ProbeFailed(ValueError):
    """The server could not be listed: the message says why (one line for the terminal)."""


@dataclass(frozen=True)
class McpApp:
    """What a server says of itself, as its app: the manifest, its UIs' documents (a path
    under `web/` → the HTML), the tools left out and the UIs left out (their tools stay,
    without a UI), each `(the tool's name or the UI's URI, reason)`."""

    manifest: Manifest
    documents: Mapping[str, str]
    refused: tuple[tuple[str, str], ...]
    ui_refused: tuple[tuple[str, str], ...] = ()
    listed: tuple[dict[str, Any], ...] = ()  # its `tools/list`, for a refusal to point into


def dev_mcp(
    folder: Path,
    command: list[str],
    data_dir: Path,
    *,
    scope: str | None = None,
    env: Mapping[str, str] | None = None,
    kept_in: str = "dev-mcp",
) -> dict[str, str]:
    """The registry entry of the MCP server `command` run from `folder` (the module's
    docstring), its manifest written from the server's own `tools/list`. Raises ProbeFailed.
    An imported server (`_mcp_import`) names its `scope`, the `env` its server is started
    with (secrets: they go to the probe on its stdin, never argv) and the folder it is kept in
    under the data dir."""
    folder = folder.resolve()
    home = Path.home().resolve()
    if folder == home or home.is_relative_to(folder) or data_dir.resolve().is_relative_to(folder):
        raise ProbeFailed(
            f"{folder}: run `lineup run --dev-mcp` from the server's own folder "
            "(not your home, nor a folder holding it or the data dir)"
        )
    app = probe_app(folder, command, scope=scope, env=env)
    manifest = app.manifest
    where = write_app(app, data_dir / kept_in / manifest.app_scope)
    entry = {
        "app_scope": manifest.app_scope,
        "manifest": str(where),
        "entry": "",
        "app_path": str(folder),
        "title": f"{manifest.title or manifest.app_scope} (dev)",
        "dev": "true",
    }
    if app.refused:
        entry["refused"] = " ".join(f"{name}:{reason}" for name, reason in app.refused)
    if app.ui_refused:
        entry["ui_refused"] = " ".join(f"{uri}:{reason}" for uri, reason in app.ui_refused)
    return entry


def probe_app(
    folder: Path,
    command: list[str],
    *,
    scope: str | None = None,
    version: str | None = None,
    env: Mapping[str, str] | None = None,
) -> McpApp:
    """The app of the MCP server `command` run from `folder`, as it lists itself inside the
    sandbox, offline (the module's docstring): its scope `scope` (else its `serverInfo.name`,
    `scope_of`), its version `version` (else its `serverInfo.version`), the server started
    with `env` (`dev_mcp`). Raises ProbeFailed."""
    from lineup.sdk.manifest import ManifestInvalid
    from lineup.sdk.mcp_server import manifest_of, scope_of, tools_of
    from lineup.sdk.mcp_ui import link, ui_of

    if not command:
        raise ProbeFailed("--dev-mcp needs the server's command after `--`")
    program = shutil.which(command[0])
    if program is None:
        raise ProbeFailed(f"{command[0]}: not found on PATH")
    listed = _probe(folder.resolve(), [program, *command[1:]], dict(env or {}))
    info = listed.get("server") or {}
    scope = scope or scope_of(str(info.get("name") or folder.resolve().name))
    found = listed.get("tools") or []
    ui = ui_of(found, listed.get("resources") or [], listed.get("read") or {})
    tools = link(tools_of(scope, found), found, ui.entrypoints)
    try:
        manifest = manifest_of(
            scope,
            version or str(info.get("version") or "0"),
            info.get("title"),
            command,
            tools,
            ui.entrypoints,
        )
    except ManifestInvalid as exc:
        raise ProbeFailed(f"{scope}: {exc.reason} {exc.path}".rstrip()) from None
    listed_tools = tuple(t for t in found if isinstance(t, dict))
    return McpApp(manifest, ui.documents, tools.refused, ui.refused, listed_tools)


def write_app(app: McpApp, where: Path) -> Path:
    """Write the app into the folder `where` (created owner-only): `manifest.json`, and its
    UIs' documents under `web/`, which replaces any there. The manifest's path."""
    from lineup.sdk.manifest import manifest_json

    where.mkdir(mode=0o700, parents=True, exist_ok=True)
    shutil.rmtree(where / "web", ignore_errors=True)
    write_documents(app, where / "web")
    (where / "manifest.json").write_text(manifest_json(app.manifest))
    return where / "manifest.json"


def write_documents(app: McpApp, web: Path) -> None:
    """Write the app's UI documents under `web` (its `mcp-ui/` folder replaced, anything else
    there kept: a packed server's own `web/` is its own)."""
    from lineup.sdk.mcp_ui import DOCUMENT_FOLDER

    shutil.rmtree(web / DOCUMENT_FOLDER, ignore_errors=True)
    for document, html in app.documents.items():
        path = web / document
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        path.write_text(html, encoding="utf-8")


def _probe(folder: Path, command: list[str], env: dict[str, str]) -> dict[str, Any]:
    from lineup.sdk.mcp_ui import MAX_UI_DOCUMENT, MAX_UI_RESOURCES

    # Its answer, JSON in UTF-8: a document's text at most doubles (escaped quotes, backslashes).
    max_output = MAX_LISTING + 2 * MAX_UI_RESOURCES * MAX_UI_DOCUMENT
    with tempfile.TemporaryDirectory(prefix="lineup-mcp-probe-") as scratch:
        request = {"folder": str(folder), "command": command, "data_dir": scratch, "env": env}
        try:
            done = subprocess.run(
                [sys.executable, "-m", "lineup.supervisor._mcp_probe"],
                input=json.dumps(request).encode(),
                capture_output=True,
                timeout=PROBE_TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise ProbeFailed(f"{command[0]}: no tools/list within {PROBE_TIMEOUT:.0f}s") from None
    if done.returncode != 0 or len(done.stdout) > max_output:
        said = done.stderr.decode(errors="replace").strip().splitlines()
        last = (said or ["no output"])[-1][:300]
        raise ProbeFailed(f"{command[0]}: the server did not list its tools: {last}")
    try:
        found = json.loads(done.stdout.decode())
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

    listed = trio.run(_list, folder, command, request.get("env") or None)
    # A pipe (the sandbox sends only a tty to /dev/null), in UTF-8 whatever the locale.
    sys.stdout.buffer.write(json.dumps(listed, ensure_ascii=False).encode())


async def _list(folder: str, command: list[str], env: dict[str, str] | None) -> dict[str, Any]:
    import trio
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from lineup.sdk._mcp_elicit import LineUpClientSession, decline_all
    from lineup.sdk._mcp_host import list_tools
    from lineup.sdk.mcp_ui import linked_uris

    params = StdioServerParameters(command=command[0], args=command[1:], cwd=folder, env=env)
    with trio.fail_after(PROBE_TIMEOUT - 5):
        # The adapter's capabilities: a server may offer a tool only to a client that can
        # elicit (`lineup.sdk._mcp_elicit`), and the manifest must list what the app serves.
        async with (
            stdio_client(params) as (read, write),
            LineUpClientSession(read, write, elicitation_callback=decline_all) as session,
        ):
            init = await session.initialize()
            tools = await list_tools(session)
            uris = linked_uris(tools)
            listed = await _list_resources(session) if uris and init.capabilities.resources else []
            contents = {uri: await _read(session, uri) for uri in uris}
    info = init.server_info
    return {
        "server": {"name": info.name, "version": info.version, "title": info.title},
        "tools": tools,
        "resources": listed,
        "read": contents,
    }


async def _list_resources(session: Any) -> list[dict[str, Any]]:
    """The server's `resources/list`, at most MAX_RESOURCE_PAGES pages (`ui_of` reads each
    one's type and `_meta.ui`); nothing when it cannot list them."""
    import mcp_types as types

    listed: list[dict[str, Any]] = []
    cursor: str | None = None
    try:
        for _ in range(MAX_RESOURCE_PAGES):
            page = await session.list_resources(
                params=types.PaginatedRequestParams(cursor=cursor) if cursor else None
            )
            listed += [_wire(r) for r in page.resources]
            cursor = page.next_cursor
            if not cursor:
                break
    except Exception as exc:  # the server's answer: its resources are then read alone
        print(f"resources/list: {type(exc).__name__}", file=sys.stderr)
    return listed


async def _read(session: Any, uri: str) -> dict[str, Any]:
    """The one content of `resources/read` of `uri` (the one of that URI, else the first), as
    on the wire; a text over MAX_UI_DOCUMENT as its size only; `{"error": …}` if unread."""
    from lineup.sdk.mcp_ui import MAX_UI_DOCUMENT

    try:
        result = await session.read_resource(uri)
    except Exception as exc:  # the server's answer, not ours
        return {"error": type(exc).__name__}
    contents = [_wire(c) for c in result.contents]
    content = next((c for c in contents if c.get("uri") == uri), contents[0] if contents else None)
    if content is None:
        return {"error": "no_content"}
    size = len(str(content.get("text", "")).encode()) + len(str(content.get("blob", ""))) * 3 // 4
    if size > MAX_UI_DOCUMENT:
        return {"mimeType": content.get("mimeType"), "size": size}
    return content


def _wire(model: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dumped


if __name__ == "__main__":
    _main()
