"""Reload on save for the development apps of `lineup run --dev-app PATH` (focus's side).

Theory of operation
-------------------
The dev-app watcher (`lineup.ops.devwatch`, a child of the tree) watches each development
app's folder. When a file in it changes, it regenerates the manifest in a subprocess of its own
(the developer's code never runs in a runtime process), writes it over the registry entry's
`manifest` file and asks focus to reload the app (`focus.dev_app.reload`). Focus then, one
reload at a time:

1. reads that manifest again, as it reads every manifest (`load_manifest`, its code never);
   a manifest that does not load, or names another app_scope (the registry entry, the store's
   row, the instances are all keyed by it: a restart of lineup takes the new one), is refused
   and nothing changes;
2. records the new version in the store (`store.registry.put`, source `dev`) and replaces the
   manifest focus serves the app's tools, views and Surfaces from;
3. restarts the app's process if it runs (a live instance that is not suspended): stopped,
   then started again for its topmost live instance, as after a crash. Its instances stay what
   they were, the user's foreground one in front; each is asked for its view again
   (`miniapp.view.refresh`), which the new code draws. A suspended instance has no process:
   the new code runs when it is resumed;
4. publishes the inventory (a new revision only if the tools changed; the Shells' launcher in
   any case);
5. tells every Shell `<title> reloaded` (a `shell.notice`).

A development MCP app (`lineup run --dev-mcp`) has no files to watch: its server says when its
tools change (`notifications/tools/list_changed`), and its process sends the new list
(`focus.sdk.mcp.tools_changed`); the app's manifest takes them and the inventory is published,
with no restart (the process is the one that listed them).

A refusal, focus's own (its reply) or the watcher's (the manifest could not be generated), is
printed by the watcher in the terminal, `lineup: dev app PATH: <reason> <where>`, and that
line is told to focus (`focus.dev_app.refused`), which shows it to every Shell as an error
notice. The previous version keeps running.
"""

from __future__ import annotations

import logging
from typing import Final

import trio

import lineup
from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.actors.kernel.control import ChildStopReply, ChildStopRequest
from lineup.actors.store.messages import AppRegistryPutReply, AppRegistryPutRequest
from lineup.hostbridge.messages import NoticeEvent
from lineup.sdk import protocol as sdk
from lineup.sdk.manifest import Manifest, ManifestInvalid, incompatibility, load_manifest
from lineup.sdk.mcp_server import tools_of
from lineup.sdk.mcp_ui import link

from ._access import Access
from ._lifecycle import Lifecycle
from ._port import Port
from ._publisher import Publisher
from .messages import DevAppRefusedEvent, DevAppReloadReply, DevAppReloadRequest

__all__ = ["DevReload"]

log = logging.getLogger("lineup.focus")

STOP_TIMEOUT: Final = 20.0
MAX_MANIFEST_FILE: Final = 1 << 20  # a generated manifest is a few KiB


class DevReload:
    """Focus's reloads of its development apps (see the module's docstring): a reload replaces
    the app's manifest in the book (`access.book`), restarts its process for the instances it
    serves (`lifecycle`), and publishes the inventory (`publisher`)."""

    def __init__(
        self, port: Port, access: Access, lifecycle: Lifecycle, publisher: Publisher
    ) -> None:
        self._port = port
        self.bus = port.bus
        self._book = access.book
        self._instances = access.instances
        self._lifecycle = lifecycle
        self._publisher = publisher
        self._lock = trio.Lock()  # one reload at a time, in the order asked

    async def reload(self, msg: DevAppReloadRequest) -> DevAppReloadReply:
        """Reload the development app `msg.app_scope`. Raises LineUpError
        (`app_not_installed`, `app_scope_mismatch`, `invalid_arguments`) having changed
        nothing: the supervisor prints it, and tells focus its line for the Shell."""
        async with self._lock:
            manifest = await self._read(msg)
            scope = msg.app_scope
            await self._port.store(
                AppRegistryPutRequest(
                    app_scope=scope,
                    version=manifest.version,
                    kind=manifest.kind,
                    manifest=manifest.model_dump(mode="json"),
                    source="dev",
                ),
                AppRegistryPutReply,
            )
            self._book.change(scope, manifest=manifest)
            restarted = await self._restart(scope)
            revision = self._publisher.inventory.revision
            await self._publisher.publish()  # a new revision only if the tools changed
            title = self._book.title(scope)
            log.info("focus.dev_app_reloaded app=%s restarted=%d", scope, restarted)
            await self._notice("info", f"{title} reloaded")
            return DevAppReloadReply(
                app_scope=scope,
                revision=self._publisher.inventory.revision,
                tools_changed=self._publisher.inventory.revision != revision,
                restarted=restarted,
            )

    async def mcp_tools_changed(
        self, scope: str, msg: sdk.McpToolsChangedRequest
    ) -> sdk.McpToolsChangedReply:
        """A development MCP app's server changed its tools (`notifications/tools/list_changed`):
        they replace the app's, mapped as at `--dev-mcp` (`mcp_server.tools_of`, each linked to
        its UI among the manifest's entrypoints, `mcp_ui.link`), and the
        inventory gets a new revision. Only the app's own tools, only a development app's (an
        installed app's tools are its signed manifest's). Raises `app_not_installed`."""
        async with self._lock:
            app = self._book.get(scope)
            manifest = self._book.manifest(scope)
            if app is None or app.source != "dev" or manifest is None or manifest.mcp is None:
                raise LineUpError(ErrorCode.APP_NOT_INSTALLED, "no development MCP app")
            tools = link(tools_of(scope, msg.tools), msg.tools, manifest.entrypoints)
            try:
                changed = load_manifest(
                    {
                        **manifest.model_dump(mode="json"),
                        "tools": [d.model_dump(mode="json") for d in tools.descriptors],
                    }
                )
            except ManifestInvalid as exc:
                raise LineUpError(ErrorCode.INVALID_ARGUMENTS, exc.reason) from None
            self._book.change(scope, manifest=changed)
            await self._publisher.publish()  # a new revision only if the tools changed
            log.info(
                "focus.mcp_tools_changed app=%s tools=%d refused=%d",
                scope,
                len(tools.descriptors),
                len(tools.refused),
            )
            return sdk.McpToolsChangedReply(
                tools=len(tools.descriptors), refused=len(tools.refused)
            )

    async def refused(self, msg: DevAppRefusedEvent) -> None:
        """The supervisor refused the app's new version: every Shell is shown its line."""
        log.info("focus.dev_app_refused app=%s", msg.app_scope)
        await self._notice("error", msg.line)

    async def _read(self, msg: DevAppReloadRequest) -> Manifest:
        app = self._book.get(msg.app_scope)
        if app is None or app.source != "dev":
            raise LineUpError(ErrorCode.APP_NOT_INSTALLED, "no development app of that scope")
        try:
            async with await trio.open_file(app.manifest_file, "rb") as file:
                raw = await file.read(MAX_MANIFEST_FILE + 1)
            if len(raw) > MAX_MANIFEST_FILE:
                raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "manifest.json is too large")
            manifest = load_manifest(raw)
        except OSError as exc:
            raise LineUpError(ErrorCode.INVALID_ARGUMENTS, f"manifest: {exc.strerror}") from exc
        except ManifestInvalid as exc:
            raise LineUpError(ErrorCode.INVALID_ARGUMENTS, f"{exc.reason} {exc.path}") from exc
        refusal = incompatibility(manifest, lineup.__version__)
        if refusal is not None:
            raise LineUpError(
                refusal,
                f"this LineUp ({lineup.__version__}) cannot run it: host.min_version is "
                f"{manifest.host.min_version}"
                if refusal is ErrorCode.HOST_VERSION_UNSUPPORTED
                else "this LineUp does not offer its runtime_sdk's api version or features",
            )
        if manifest.app_scope != msg.app_scope:
            raise LineUpError(
                ErrorCode.APP_SCOPE_MISMATCH,
                f"app_scope changed from {msg.app_scope} to {manifest.app_scope}: "
                "restart lineup to run it",
            )
        return manifest

    async def _restart(self, scope: str) -> int:
        """Restart the app's process if it runs; returns how many instances it serves."""
        running = self._instances.running(scope)
        if not running:
            return 0
        await self.bus.request(
            "supervisor",
            # Stopped by the runtime: no instance fails, as none would for a crash.
            ChildStopRequest(name=f"miniapp:{scope}"),
            expect=ChildStopReply,
            timeout=STOP_TIMEOUT,
        )
        await self._lifecycle.ensure_running(running[0])
        # Its views are drawn again, by the new code (one refresh: the app draws them all).
        await self._port.tell_app(scope, sdk.ViewRefreshEvent())
        return len(running)

    async def _notice(self, level: str, text: str) -> None:
        event = NoticeEvent(level="error" if level == "error" else "info", text=text)
        await self._port.tell_hostbridge(event)  # best effort, logged if not told
