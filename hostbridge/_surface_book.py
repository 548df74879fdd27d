"""What the hostbridge knows of the Surfaces the Shells mount (`SurfaceBook`), where their files
are (`SurfaceFiles`, `surface_file`) and the headers every Surface response carries
(`surface_headers`, and an MCP App document's, `mcp_document_csp`); `_surfaces` has the why."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote

from lineup.actors.focus.messages import SurfaceResource
from lineup.actors.kernel import ErrorCode
from lineup.facts.views import SURFACE_VIEW_KIND as SURFACE_KIND
from lineup.sdk.manifest import SURFACE_CLIENT_URL
from lineup.sdk.mcp_apps import McpAppUi

from ._mcp_csp import mcp_app_csp
from ._web import CONTENT_TYPES, safe_file

__all__ = [
    "GRANT_LOAD_S",
    "RESERVED_PREFIX",
    "SURFACE_CONTENT_TYPES",
    "SurfaceBook",
    "SurfaceFiles",
    "mcp_document_csp",
    "surface_file",
    "surface_headers",
]

# A Surface's `surface.network` grant is for the document load that follows it at once: one
# the Shell never made (its page gone meanwhile) is not kept for a later, unasked one.
GRANT_LOAD_S: Final = 30.0
# The files a Surface may have: the Shell's own kinds and the images a page may show.
SURFACE_CONTENT_TYPES: Final = {
    **CONTENT_TYPES,
    ".png": "image/png",
    ".json": "application/json",
}


@dataclass(frozen=True)
class SurfaceFiles:
    """Where an open Surface's files are: the hostbridge's alone, never sent to a Shell."""

    surface_id: str
    web_root: Path
    document: str
    mcp_ui: McpAppUi | None = None  # what its entrypoint declares, if it is an MCP App's
    mcp_app: bool = False  # its document is an MCP App's UI (`_mcp_document`)
    resources: tuple[SurfaceResource, ...] = ()  # its app's MCP App UI documents


RESERVED_PREFIX: Final = SURFACE_CLIENT_URL.split("/")[0] + "/"  # `_lineup/`: the runtime's


def surface_file(root: Path, path: str) -> tuple[Path, str] | None:
    """The file under `root` that `path` names, and its content type, by the rules of
    `_server.web_file`: plain segments, a known extension, resolving inside `root`."""
    return safe_file(root, path, SURFACE_CONTENT_TYPES)


def _own(port: int, instance_id: str) -> tuple[str, str]:
    """The Surface's own path on each of the Shell's hosts, and the Shell's origins."""
    hosts = (f"http://127.0.0.1:{port}", f"http://localhost:{port}")
    own = " ".join(f"{h}/surfaces/{quote(instance_id, safe='')}/" for h in hosts)
    return own, " ".join(hosts)


def mcp_document_csp(port: int, instance_id: str, ui: McpAppUi | None, *, granted: bool) -> str:
    """The CSP of an MCP App's document: the default, or with its declared origins where the
    user granted this load the network (`_mcp_csp`)."""
    own, ancestors = _own(port, instance_id)
    return mcp_app_csp(own, ancestors, port, ui.csp if ui else None, granted=granted)


def surface_headers(port: int, instance_id: str, *, mcp_app: bool = False) -> dict[str, str]:
    """The headers of every response under `/surfaces/{instance_id}/`. An MCP App's page
    (`mcp_app`) may also have inline style, and images, fonts and media of its own, as the
    spec's default policy allows; never inline script (`_mcp_document` says why); its document
    alone may carry more, the user's grant (`mcp_document_csp`)."""
    own, ancestors = _own(port, instance_id)
    if mcp_app:
        csp = mcp_app_csp(own, ancestors, port, None, granted=False)
    else:
        csp = (
            f"default-src 'none'; script-src {own}; style-src {own}; img-src data: blob:; "
            "connect-src 'none'; font-src 'none'; media-src 'none'; object-src 'none'; "
            "frame-src 'none'; child-src 'none'; worker-src 'none'; manifest-src 'none'; "
            f"base-uri 'none'; form-action 'none'; frame-ancestors {ancestors}"
        )
    return {
        "Content-Security-Policy": csp,
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "no-referrer",
        # The iframe's origin is opaque: its own scripts and styles are cross-origin loads, which
        # `same-origin` would block. They are the app's public files; the Host check stands.
        "Cross-Origin-Resource-Policy": "cross-origin",
        "Cache-Control": "no-store",
    }


class SurfaceBook:
    """The live instances, the current Surface of each that has one (from its views), and the
    files of those whose assets focus gave (forgotten as soon as the view is another)."""

    def __init__(self) -> None:
        self._live: set[str] | None = None  # None: no instance list yet (all are live)
        self._surfaces: dict[str, dict[str, Any]] = {}  # instance_id → its lineup.surface view
        self._scopes: dict[str, str] = {}  # instance_id → the app whose view that is
        self._files: dict[str, SurfaceFiles] = {}
        # instance_id → {capability: until when}: granted for its next document load (`take`).
        self._granted: dict[str, dict[str, float]] = {}

    def view(self, instance_id: str, view: dict[str, Any], app_scope: str) -> None:
        if view.get("kind") == SURFACE_KIND and isinstance(view.get("surface_id"), str):
            held = self._surfaces.get(instance_id)
            if held is not None and held.get("surface_id") != view["surface_id"]:
                self._files.pop(instance_id, None)
                self._granted.pop(instance_id, None)
            self._surfaces[instance_id] = view
            self._scopes[instance_id] = app_scope
            return
        self._forget(instance_id)

    def live(self, instance_ids: set[str]) -> None:
        self._live = set(instance_ids)
        for gone in [i for i in self._surfaces if i not in instance_ids]:
            self._forget(gone)

    def _forget(self, instance_id: str) -> None:
        self._surfaces.pop(instance_id, None)
        self._scopes.pop(instance_id, None)
        self._files.pop(instance_id, None)
        self._granted.pop(instance_id, None)

    def grant(self, instance_id: str, capability: str, *, granted: bool, now: float) -> None:
        """The gateway's answer on the instance's Surface `capability` (trio clock `now`): a
        grant is for its next document load within `GRANT_LOAD_S`; a no takes back one not
        yet used (the latest answer is the one that stands)."""
        held = self._granted.get(instance_id, {})
        held.pop(capability, None)
        if granted and self.surface(instance_id) is not None:
            held[capability] = now + GRANT_LOAD_S
        if held:
            self._granted[instance_id] = held
        else:
            self._granted.pop(instance_id, None)

    def take(self, instance_id: str, capability: str, *, now: float) -> bool:
        """Was `capability` granted for this document load? Taken: the next load asks again."""
        held = self._granted.get(instance_id)
        until = held.pop(capability, None) if held is not None else None
        if held is not None and not held:
            del self._granted[instance_id]
        return until is not None and now <= until

    def app_scope(self, instance_id: str) -> str | None:
        """The app of the instance's current Surface (the view focus relayed says), if any."""
        return self._scopes.get(instance_id) if self.surface(instance_id) is not None else None

    def surface(self, instance_id: str) -> dict[str, Any] | None:
        """The instance's Surface view, if it is live and its view is one."""
        if self._live is not None and instance_id not in self._live:
            return None
        return self._surfaces.get(instance_id)

    def check(self, instance_id: str, surface_id: str) -> ErrorCode | None:
        """None if `surface_id` is the live instance's current Surface, else the code."""
        if self._live is not None and instance_id not in self._live:
            return ErrorCode.APP_INSTANCE_NOT_FOUND
        view = self._surfaces.get(instance_id)
        if view is None or view.get("surface_id") != surface_id:
            return ErrorCode.SURFACE_NOT_FOUND
        return None

    def files(self, instance_id: str) -> SurfaceFiles | None:
        return self._files.get(instance_id)

    def remember(self, instance_id: str, files: SurfaceFiles) -> bool:
        """Keep what focus said if it is still the instance's Surface; False if not."""
        view = self.surface(instance_id)
        if view is None or view.get("surface_id") != files.surface_id:
            return False
        self._files[instance_id] = files
        return True
