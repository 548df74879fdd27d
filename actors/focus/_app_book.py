"""The apps focus runs, without I/O: one entry per app.

Theory of operation
-------------------
Every app this runtime knows is one frozen `AppEntry`: its scope; where it comes from
(`source`: shipped with LineUp or configured, a development app of this run, or installed from
a bundle); its title; what the SDK's host runs and where its files are; its manifest; whether
the user enabled it; and, for one that cannot run here, why (`refusal`: the code a launch or a
call of it gets). `AppBook` keeps the entries by scope, and a change replaces an entry whole
(`put`, `change`), so no reader sees half of one. What focus and its services ask of the apps is
a method here: the usable manifests (the inventory's, a launch's), the hidden ones (listed, never
called), a title, the refusal. The chat is an entry like the others, without a manifest: it
offers no tools.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from lineup.actors.kernel import ErrorCode
from lineup.actors.store.messages import AppRow
from lineup.facts.apps import AppSource
from lineup.sdk.manifest import Manifest

__all__ = ["AppBook", "AppEntry", "Installed"]


@dataclass(frozen=True, slots=True)
class Installed:
    """An installed app's active version: the store's row, and its package in the cache."""

    row: AppRow
    package: str | None


@dataclass(frozen=True, slots=True)
class AppEntry:
    scope: str
    source: AppSource
    title: str
    entry: str = ""  # "module:Class" the SDK's host runs ("package:" for an installed app)
    manifest_file: str = ""  # a shipped or development app's manifest.json
    app_path: str = ""  # a development app's folder, an installed app's cache folder
    web_root: str = ""  # an installed app's Surface files (others' are beside the manifest)
    manifest: Manifest | None = None
    enabled: bool = True
    refusal: ErrorCode | None = None  # why it cannot run here; None if it can
    installed: Installed | None = None

    @property
    def usable(self) -> bool:
        return self.manifest is not None and self.refusal is None

    @classmethod
    def configured(cls, app: dict[str, Any]) -> AppEntry:
        """A shipped or configured app, from its registry entry (`catalogue.registry_entries`,
        the config's `apps`), before its manifest is read."""
        scope = str(app["app_scope"])
        return cls(
            scope=scope,
            source="dev" if app.get("dev") in (True, "true") else "bundled",
            title=str(app.get("title") or scope),
            entry=str(app.get("entry", "")),
            manifest_file=str(app.get("manifest", "")),
            app_path=str(app.get("app_path", "")),
        )


class AppBook:
    """The apps by scope (the module's docstring)."""

    def __init__(self) -> None:
        self._apps: dict[str, AppEntry] = {}

    def __contains__(self, scope: object) -> bool:
        return scope in self._apps

    def __iter__(self) -> Iterator[AppEntry]:
        return iter(list(self._apps.values()))

    def get(self, scope: str) -> AppEntry | None:
        return self._apps.get(scope)

    def put(self, entry: AppEntry) -> None:
        self._apps[entry.scope] = entry

    def change(self, scope: str, **changes: Any) -> AppEntry:
        """Replace the app's entry by one with `changes`; KeyError for an unknown app."""
        entry = dataclasses.replace(self._apps[scope], **changes)
        self._apps[scope] = entry
        return entry

    def drop(self, scope: str) -> None:
        self._apps.pop(scope, None)

    # ------------------------------------------------------------------ what focus asks

    def manifests(self) -> dict[str, Manifest]:
        """The usable apps' manifests, by scope."""
        return {
            e.scope: e.manifest for e in self._apps.values() if e.usable and e.manifest is not None
        }

    def manifest(self, scope: str) -> Manifest | None:
        """The app's manifest if it is usable (one that cannot run here has none to use)."""
        entry = self._apps.get(scope)
        return entry.manifest if entry is not None and entry.usable else None

    def hidden(self) -> dict[str, Manifest]:
        """The manifests of the apps that cannot run here: listed, never called."""
        return {
            e.scope: e.manifest
            for e in self._apps.values()
            if e.refusal is not None and e.manifest is not None
        }

    def refusal(self, scope: str) -> ErrorCode | None:
        """Why the app cannot get an instance or a call now, or None."""
        entry = self._apps.get(scope)
        return entry.refusal if entry is not None else None

    def enabled(self, scope: str) -> bool:
        entry = self._apps.get(scope)
        return entry.enabled if entry is not None else True

    def title(self, scope: str, default: str | None = None) -> str:
        entry = self._apps.get(scope)
        if entry is not None:
            return entry.title
        return default if default is not None else scope

    def installed(self, scope: str) -> Installed | None:
        entry = self._apps.get(scope)
        return entry.installed if entry is not None else None
