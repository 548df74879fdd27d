"""The bundled MiniApps as the registry knows them: data only, no app code imported.

Focus reads this to build its registry (which apps this runtime offers, where each manifest
is, what the SDK's host runs for it). The system app (Chat, `chat`) is the recovery app:
it has no tools and no manifest to read, its one instance is always there, and its process is
part of the tree, started with it and restarted whatever happens, so the IM never goes dark.
The supervisor takes that app's child from here and knows no app by name.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Final

from lineup.facts.scopes import CHAT

__all__ = ["BUNDLED", "RESIDENT", "SYSTEM_APP", "BundledApp", "registry_entries"]

_HERE: Final = Path(__file__).resolve().parent


@dataclass(frozen=True)
class BundledApp:
    app_scope: str
    entry: str  # "module:Class", what the SDK's host runs (in the app's sandboxed process)
    title: str
    manifest: Path | None  # None: the system app, which offers no tools
    instance_id: str | None = None  # set for an app with one fixed, always-present instance

    def registry_entry(self) -> dict[str, str]:
        """The entry focus's registry reads (`config["apps"]` has the same shape)."""
        return {
            "app_scope": self.app_scope,
            "manifest": "" if self.manifest is None else str(self.manifest),
            "entry": self.entry,
            "title": self.title,
        }


SYSTEM_APP: Final = BundledApp(
    app_scope=CHAT,
    entry="lineup.miniapps.chat:Chat",
    title="Chat",
    manifest=None,
    instance_id=CHAT,
)
BUNDLED: Final = (
    SYSTEM_APP,
    BundledApp(
        app_scope="task-dashboard",
        entry="lineup.miniapps.task_dashboard:TaskDashboard",
        title="Task Dashboard",
        manifest=_HERE / "task_dashboard" / "manifest.json",
    ),
    BundledApp(
        app_scope="whiteboard",
        entry="lineup.miniapps.whiteboard:Whiteboard",
        title="Whiteboard",
        manifest=_HERE / "whiteboard" / "manifest.json",
    ),
    # The user's list of apps (kind core: never disabled or removed), where they install and
    # manage apps through capabilities they confirm. One instance at a time: see its module.
    BundledApp(
        app_scope="app-registry",
        entry="lineup.miniapps.app_registry:AppRegistry",
        title="App Registry",
        manifest=_HERE / "app_registry" / "manifest.json",
    ),
    # Focus periods whose end the runtime owns (a deadline operation, seed 004 §6.3).
    BundledApp(
        app_scope="pomodoro",
        entry="lineup.miniapps.pomodoro:Pomodoro",
        title="Pomodoro",
        manifest=_HERE / "pomodoro" / "manifest.json",
    ),
)
# The apps whose process is part of the tree rather than started by focus on demand.
RESIDENT: Final = (SYSTEM_APP,)


def registry_entries() -> list[dict[str, str]]:
    """Every bundled app's registry entry, the system app first."""
    return [app.registry_entry() for app in BUNDLED]
