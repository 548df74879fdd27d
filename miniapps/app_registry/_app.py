"""The App Registry: the user's list of apps, and the one place they install and manage them.

One global instance shows one Surface (`web/`): the runtime's registry (`app.registry.list`,
answered to this app alone) as a table in the user's words (`_view`: each app by its title,
what it is, its version, how it stands, its last change, the default app; its id, signer and
predecessor in a details line) with a button for each action that applies to a row, and
"Install from file…". This app changes nothing by itself:

* Install from file: `file.open` (the user picks a `.lineup` bundle in the Shell; the app gets
  it as a read-only artifact of its own, never a path), then `app.install {artifact_id}`.
* Available: the runtime's local catalog (`lineup run --catalog`, what `make run` builds),
  listed with each bundle's app, version, signer and whether it would install; Install asks
  `app.install {catalog_file}` (the same `registry.install` event, naming the entry).
* Enable / Disable / Roll back / Remove / Make default: `app.manage {operation, app_scope}`.

Each is a capability request the runtime decides and the user confirms in the runtime's own
prompt (seed 004 §2.2: never silently; there is no Agent tool that changes the registry). Each
result — completed, cancelled_by_user, permission_denied, failed with a code — becomes the
Surface's one-line status (`_view.status_of`), and the list is read again after every step and
whenever the Surface asks (`registry.refresh`, sent when it connects).

The Surface's events carry an `action_id` it draws at random per click: a re-sent event (the
Surface retries what was not acknowledged) names the same capability request, so the runtime
answers the same result and the user is asked once. Hooks run one at a time, so while a
request waits on the user the Surface shows `busy` and its buttons are disabled.

Which instance: the one the process was started for (a launch, the Shell's deep link, or a
restart), whose Surface `start` opens; `app-registry.open` (the Agent's launch, or the
user's) opens its own and closes any other, so there is one at a time.
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections import OrderedDict
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field

from lineup.sdk import (
    AppContext,
    AppInfo,
    ErrorCode,
    LineUpError,
    MiniApp,
    ToolCall,
    capabilities,
    tool,
)
from lineup.sdk import protocol as p
from lineup.sdk.manifest import Entrypoint

from . import _view

__all__ = ["AppRegistry"]

log = logging.getLogger("lineup.miniapps.app_registry")

APP_SCOPE: Final = "app-registry"
ENTRYPOINT: Final = "registry"
REFRESH_EVENT: Final = "registry.refresh"
INSTALL_EVENT: Final = "registry.install"
MANAGE_EVENT: Final = "registry.manage"
MAX_REMEMBERED: Final = 64  # action ids already handled, newest kept
_ACTION_ID: Final = re.compile(r"^[A-Za-z0-9_-]{8,64}$")
_SCOPE: Final = re.compile(r"^[a-z][a-z0-9-]{0,62}$")
_CATALOG_FILE: Final = re.compile(capabilities.CATALOG_FILE_PATTERN)

PURPOSES: Final[dict[str, str]] = {
    "file": "Choose the app bundle (.lineup file) to install.",
    "install": "Install the app bundle you chose.",
    "catalog": "Install {scope} {version} from this LineUp's local catalog.",
    "enable": "Enable {scope}.",
    "disable": "Disable {scope}: its tools leave the Agent's list and its open windows close.",
    "rollback": "Roll {scope} back to its previous version.",
    "remove": "Remove {scope} and its data.",
    "set_default": "Make {scope} the app LineUp opens at start.",
}


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class OpenInput(_Model):
    pass


class OpenOutput(_Model):
    opened: bool = Field(description="the App Registry is in front")


class AppRegistry(MiniApp):
    app_info = AppInfo(
        app_scope=APP_SCOPE,
        version="1.0.0",
        kind="core",
        surface_required=True,
        requested_capabilities=("file.open", "app.install", "app.manage"),
        entrypoints=(
            Entrypoint(
                id=ENTRYPOINT,
                kind="surface",
                default_eligible=True,
                document="index.html",
                surface_version=1,
                events=(REFRESH_EVENT, INSTALL_EVENT, MANAGE_EVENT),
            ),
        ),
    )

    def __init__(self) -> None:
        self.surfaces: dict[str, str] = {}  # instance_id -> its open Surface
        self.state: dict[str, Any] = {
            "apps": [],
            "available": [],
            "default_app": "chat",
            "busy": None,
            "status": None,
            "listed": 0,
        }
        self.done: OrderedDict[str, None] = OrderedDict()  # action ids handled

    async def start(self, app: AppContext) -> None:
        self.app = app
        # The instance this process was started for (a launch, a deep link, a restart):
        # its Surface is the registry's. Not fatal: a launch or a refresh opens it again.
        try:
            await self._open(app.instance_id)
        except LineUpError as exc:
            log.info("app_registry.not_opened code=%s", exc.code.value)

    # ------------------------------------------------------------------ the tool

    @tool(
        "app-registry.open",
        handling="launch",
        input=OpenInput,
        output=OpenOutput,
        requires_foreground=True,
        description=(
            "Open the App Registry in front of the user: the list of installed apps, where "
            "the user (never the Agent) installs, enables, disables, rolls back or removes "
            "apps and chooses the default app, each confirmed in the runtime's prompt."
        ),
    )
    async def open(self, call: ToolCall[OpenInput]) -> OpenOutput:
        await self._open(call.instance_id)
        for other in [i for i in self.surfaces if i != call.instance_id]:
            # One instance at a time: the newest is the registry's window.
            self.surfaces.pop(other, None)
            try:
                await self.app.lifecycle.request_close(other)
            except LineUpError as exc:
                if exc.code is not ErrorCode.APP_INSTANCE_NOT_FOUND:
                    raise
        return OpenOutput(opened=True)

    # ------------------------------------------------------------------ hooks

    async def on_surface_event(self, event: p.SurfaceEvent) -> None:
        self.surfaces.setdefault(event.instance_id, event.surface_id)
        if event.name == REFRESH_EVENT:
            await self._refresh()
            return
        action_id = event.data.get("action_id")
        if not isinstance(action_id, str) or not _ACTION_ID.match(action_id):
            return  # not one of ours: the Surface always sends one
        if action_id in self.done:
            await self._push()  # a re-sent click: its outcome is shown already
            return
        self._remember(action_id)
        if event.name == INSTALL_EVENT:
            name = event.data.get("catalog_file")
            if name is None:
                await self._install(event.instance_id, action_id)
            elif isinstance(name, str) and len(name) <= 200 and _CATALOG_FILE.match(name):
                await self._install_from_catalog(event.instance_id, action_id, name)
        elif event.name == MANAGE_EVENT:
            operation = event.data.get("operation")
            scope = event.data.get("app_scope")
            if (
                isinstance(operation, str)
                and operation in _view.ACTIONS
                and isinstance(scope, str)
                and _SCOPE.match(scope)
            ):
                await self._manage(event.instance_id, action_id, operation, scope)

    async def on_surface_closed(self, event: p.SurfaceClosedEvent) -> None:
        if self.surfaces.get(event.instance_id) == event.surface_id:
            del self.surfaces[event.instance_id]

    async def on_view_refresh(self) -> None:
        # Focus restarted, or a suspended instance came back: open its Surface again.
        for instance_id in {self.app.instance_id, *self.surfaces}:
            try:
                await self._open(instance_id)
            except LineUpError as exc:
                self.surfaces.pop(instance_id, None)
                log.info("app_registry.not_reopened code=%s", exc.code.value)

    # ------------------------------------------------------------------ actions

    async def _install(self, instance_id: str, action_id: str) -> None:
        await self._set(busy="install", status=None)
        try:
            picked = await self._ask(
                instance_id,
                action_id,
                "file.open",
                PURPOSES["file"],
                {"media_types": [p.BUNDLE_MEDIA_TYPE]},
            )
            artifact = _artifact_id(picked)
            if picked.status != "completed" or artifact is None:
                await self._set(status=_view.status_of("file", _failed_without(picked)))
                return
            installed = await self._ask(
                instance_id,
                action_id,
                "app.install",
                PURPOSES["install"],
                {"artifact_id": artifact},
            )
        finally:
            await self._set(busy=None)
            await self._refresh()
        # After the list is read again: the line names the app by its title.
        await self._set(status=_view.status_of("install", installed, titles=self._titles()))

    async def _install_from_catalog(self, instance_id: str, action_id: str, name: str) -> None:
        entry = next((e for e in self.state["available"] if e.get("file") == name), None)
        purpose = (
            PURPOSES["catalog"].format(
                scope=entry.get("title") or entry["app_scope"], version=entry["version"]
            )
            if entry and entry.get("app_scope")
            else PURPOSES["install"]
        )
        await self._set(busy="install", status=None)
        try:
            installed = await self._ask(
                instance_id, action_id, "app.install", purpose, {"catalog_file": name}
            )
        finally:
            await self._set(busy=None)
            await self._refresh()
        await self._set(status=_view.status_of("install", installed, titles=self._titles()))

    async def _manage(self, instance_id: str, action_id: str, operation: str, scope: str) -> None:
        await self._set(busy=f"{operation}:{scope}", status=None)
        try:
            result = await self._ask(
                instance_id,
                action_id,
                "app.manage",
                PURPOSES[operation].format(scope=self._titles().get(scope, scope)),
                {"operation": operation, "app_scope": scope},
            )
        finally:
            await self._set(busy=None)
            await self._refresh()
        await self._set(status=_view.status_of(operation, result, scope, self._titles()))

    async def _ask(
        self,
        instance_id: str,
        action_id: str,
        capability: str,
        purpose: str,
        data: dict[str, Any],
    ) -> p.CapabilityResult:
        request_id = _request_id(action_id, capability)
        try:
            return await self.app.capabilities.request(
                capability, purpose, data, instance_id=instance_id, request_id=request_id
            )
        except LineUpError as exc:
            # The request never got its answer (the runtime restarting, a deadline): a
            # failure like any other, shown by its code.
            return p.CapabilityResult(
                request_id=request_id, capability=capability, status="failed", code=exc.code.value
            )

    # ------------------------------------------------------------------ the Surface

    async def _open(self, instance_id: str) -> None:
        reply = await self.app.surfaces.request_open(
            instance_id, entrypoint=ENTRYPOINT, state=self.state
        )
        self.surfaces[instance_id] = reply.surface_id
        if not reply.changed:  # open already, with the state a former process left in it
            await self.app.surfaces.update(reply.surface_id, self.state)
        await self._refresh()

    async def _refresh(self) -> None:
        try:
            listing = await self.app.registry.list()
        except LineUpError as exc:
            await self._set(status=_view.listing_failed(exc.code.value))
            return
        await self._set(
            apps=_view.rows(listing),
            available=_view.available(listing),
            default_app=listing.default_app,
            listed=int(self.state["listed"]) + 1,
        )

    def _titles(self) -> dict[str, str]:
        """The listed apps' titles, by scope, as the Surface shows them."""
        return {
            str(row["app_scope"]): str(row["title"])
            for row in self.state["apps"]
            if isinstance(row, dict) and row.get("title")
        }

    async def _set(self, **changes: Any) -> None:
        self.state = {**self.state, **changes}
        await self._push(changes)

    async def _push(self, patch: dict[str, Any] | None = None) -> None:
        """Send `patch` (else the whole state) to every open Surface; a closed one is
        forgotten."""
        for instance_id, surface_id in list(self.surfaces.items()):
            try:
                await self.app.surfaces.update(surface_id, self.state if patch is None else patch)
            except LineUpError as exc:
                if exc.code is not ErrorCode.SURFACE_NOT_FOUND:
                    raise
                self.surfaces.pop(instance_id, None)

    def _remember(self, action_id: str) -> None:
        self.done[action_id] = None
        while len(self.done) > MAX_REMEMBERED:
            self.done.popitem(last=False)


def _artifact_id(result: p.CapabilityResult) -> str | None:
    artifact = (result.output or {}).get("artifact")
    if isinstance(artifact, dict):
        artifact_id = artifact.get("artifact_id")
        if isinstance(artifact_id, str) and artifact_id:
            return artifact_id
    return None


def _failed_without(result: p.CapabilityResult) -> p.CapabilityResult:
    """`result`, or a failure if it completed without an artifact (the runtime's mistake)."""
    if result.status != "completed":
        return result
    return result.model_copy(update={"status": "failed", "code": "provider_failed"})


def _request_id(action_id: str, capability: str) -> str:
    return hashlib.sha256(f"{action_id}\x00{capability}".encode()).hexdigest()[:32]
