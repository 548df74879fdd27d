"""What the hostbridge knows of the Surfaces the Shells mount (issue 13), and how it checks them.

A Surface is an instance's view of kind `lineup.surface` (focus makes it while the app has one
open): the Shell frames `/surfaces/{instance_id}/index.html` in a sandboxed iframe, and the
hostbridge serves those files from the app package's `web/` folder, which it asks focus for
(`focus.ui.surface.assets`) and remembers while that instance's view is that Surface. Every
surface response carries `surface_headers`: a CSP of its own (scripts and styles only from that
instance's asset path, no connection of any kind, framed by the Shell only). The frame's origin
is opaque (no `allow-same-origin`), so its own files are cross-origin loads: they are served
`Cross-Origin-Resource-Policy: cross-origin` (`same-origin` would block every one of them),
and a Surface's scripts must be classic `<script src>` ones: a module script is a CORS load
from origin `null`, which nothing here answers (and nothing should). Every script is served
with the runtime's guard first (`_surface_guard`): CSP does not govern WebRTC, the guard takes
it away.

An MCP App Surface's network (issue 30) is the capability `surface.network`: the Shell asks it
before it frames the page, as a Surface's own request, and a `completed` result (the user's
grant, remembered or once) is kept here for that instance's next document load within
`GRANT_LOAD_S`, which takes it (`SurfaceBook.grant` / `take`), and any other answer takes back
one not used yet: that load's CSP allows the origins its entrypoint declares (`_mcp_csp`),
every other load's is the default. So a grant reaches exactly one document, asked afresh at
every mount, and a revoked grant is never applied again: the Shell mounts the page anew without
asking, and the default comes back.

The bridge's requests that need the runtime come as `surface.request` frames; `SurfaceBook`
says whether one names a live instance whose current view is that Surface, and `METHODS` holds
the params model of each method the hostbridge relays; `SurfaceRelay` (the server's
`SurfaceHost`) checks each and asks focus. Every refusal is answered with its code, to the Shell
that asked only, and audited by type and code (never the params).

A Surface's share of its app's SDK (seed 004 §6: its app's state view, the apps it may open,
a lifecycle or navigation action: `APP_METHODS`) goes to focus as `focus.ui.surface.app`, for
the Surface's own app and instance, and is decided as the app's own request would be.

A Surface's `lineup/capabilities/request` goes to the gateway (`gateway.ui.surface.capability`,
decided as its app's own request would be), which may wait on the user's permission prompt for
a minute: it is relayed from a task of its own (at most `MAX_CAPABILITY_REQUESTS` at once), so
the Shell's socket goes on reading (the user's answer to that very prompt comes on it). The
reply's result is the `CapabilityResult` (its fields, without the bus tag).

An MCP App's `resources/list|read`, `ui/update-model-context` and `ui/download-file` are
`_surface_mcp`'s (a download waits on the user as a capability request does, from a task of
its own); the hostbridge's own refusals of them are audited here like every other.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Final, Literal
from urllib.parse import quote

import trio
from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError

from lineup.actors.focus.messages import (
    SurfaceAccepted,
    SurfaceAppReply,
    SurfaceAppRequest,
    SurfaceAssetsReply,
    SurfaceAssetsRequest,
    SurfaceEventRequest,
    SurfaceResource,
    SurfaceSessionDataRequest,
)
from lineup.actors.gateway.messages import CapabilityResult, SurfaceCapabilityRequest
from lineup.actors.kernel import Bus, ErrorCode, LineUpError
from lineup.actors.router.messages import SurfaceAskReply, SurfaceAskRequest
from lineup.facts.views import SURFACE_VIEW_KIND as SURFACE_KIND
from lineup.sdk.capabilities import MAX_PURPOSE_CHARS
from lineup.sdk.interactions import StandardInteractionRequest
from lineup.sdk.manifest import SURFACE_CLIENT, SURFACE_CLIENT_URL
from lineup.sdk.mcp_apps import McpAppUi
from lineup.sdk.mcp_grants import NETWORK_CAPABILITY
from lineup.sdk.protocol import MAX_SURFACE_EVENT_BYTES

from ._audit import user_record
from ._mcp_csp import mcp_app_csp
from ._mcp_document import INLINE_DIR, SplitDocument, split_inline_scripts
from ._server import CONTENT_TYPES, Reply, SurfaceFile, safe_file
from ._surface_agent_messages import (
    AGENT_MESSAGE_METHODS,
    AgentMessagesParams,
    relay_agent_messages,
)
from ._surface_mcp import (
    MCP_METHODS,
    ContextParams,
    DownloadParams,
    McpRequests,
    ReadParams,
    Refused,
    resource_list,
)
from ._surface_tools import SurfaceToolRelay, ToolsCallParams
from .shell_protocol import ShellSurfaceReply, SurfaceError, SurfaceRequestFrame

__all__ = [
    "METHODS",
    "SURFACE_KIND",
    "SURFACE_REQUEST_REFUSED",
    "SurfaceBook",
    "SurfaceFiles",
    "SurfaceRelay",
    "params_size",
    "surface_file",
    "surface_headers",
]

MAX_SURFACE_PARAMS_BYTES: Final = MAX_SURFACE_EVENT_BYTES  # a request's params, compact JSON
SURFACE_REQUEST_REFUSED: Final = "hostbridge.surface_request_refused"  # its audit event
ASK_TIMEOUT: Final = 3.0
QUESTION_TIMEOUT: Final = ASK_TIMEOUT * 5  # the router records a question in a few steps
# A capability request may wait on the prompt (a minute by default) and then on a provider the
# user runs (a file picker): the gateway ends both by its own deadlines well before this.
CAPABILITY_TIMEOUT: Final = 300.0
MAX_CAPABILITY_REQUESTS: Final = 16  # relayed at once, from every Shell
# A Surface's `surface.network` grant is for the document load that follows it at once: one
# the Shell never made (its page gone meanwhile) is not kept for a later, unasked one.
GRANT_LOAD_S: Final = 30.0
# The files a Surface may have: the Shell's own kinds and the images a page may show.
SURFACE_CONTENT_TYPES: Final = {
    **CONTENT_TYPES,
    ".png": "image/png",
    ".json": "application/json",
}


class _Params(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class NoParams(_Params):
    pass


class ReplaceParams(_Params):
    data: dict[str, Any]
    expected_revision: StrictInt = Field(ge=0)


class EventParams(_Params):
    name: Annotated[str, Field(min_length=1, max_length=128)]
    data: dict[str, Any] = Field(default_factory=dict)


class UiRequestParams(_Params):
    """A standard interaction request (`lineup.sdk.interactions`: notice, choice, confirm,
    input), checked whole here; the router checks it again as it records it."""

    request: StandardInteractionRequest


class CapabilityParams(_Params):
    """A Surface's capability request (`lineup.sdk.capabilities`): the gateway checks the
    capability's name and its input."""

    capability: Annotated[str, Field(min_length=1, max_length=100)]
    purpose: Annotated[str, Field(min_length=1, max_length=MAX_PURPOSE_CHARS)]
    input: dict[str, Any] = Field(default_factory=dict)


class ActionParams(_Params):
    """A declarative action of the Surface's app (`lineup.sdk.protocol.AppAction`, one of
    `SURFACE_ACTION_KINDS`): focus checks it whole (`bridge_params_invalid`) and decides it."""

    action: dict[str, Any]


# The Surface's share of its app's SDK (seed 004 §6: "the same semantics, restricted"): its
# app's view model, the apps it may open, and its lifecycle and navigation actions, each asked
# of focus for the Surface's own app and instance (`focus.ui.surface.app`).
APP_METHODS: Final[dict[str, Literal["state", "state.subscribe", "apps.list", "action"]]] = {
    "lineup/state/snapshot": "state",
    "lineup/state/subscribe": "state.subscribe",  # then `hostbridge.surface.notify` app_state
    "lineup/apps/list-available": "apps.list",
    "lineup/actions/dispatch": "action",
}

# The bridge methods the hostbridge relays: to focus, and a Surface's question to the router
# (web/js/core/bridge.js answers the rest).
METHODS: Final[dict[str, type[BaseModel]]] = {
    "lineup/state/snapshot": NoParams,
    "lineup/apps/list-available": NoParams,
    "lineup/actions/dispatch": ActionParams,
    "lineup/session-data/get": NoParams,
    "lineup/session-data/replace": ReplaceParams,
    "lineup/session-data/subscribe": NoParams,
    "lineup/event": EventParams,
    "lineup/ui/request": UiRequestParams,
    "lineup/capabilities/request": CapabilityParams,
    **MCP_METHODS,  # an MCP App's (`_surface_mcp`)
    "tools/call": ToolsCallParams,
    # The Surface's app state subscription and its agent messages (issue 29).
    "lineup/state/subscribe": NoParams,
    **AGENT_MESSAGE_METHODS,
}


def params_size(params: dict[str, Any]) -> int:
    return len(json.dumps(params, separators=(",", ":"), ensure_ascii=False).encode())


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


class SurfaceRelay:
    """The server's `SurfaceHost`: files of open Surfaces, and the bridge requests for focus."""

    def __init__(self, bus: Bus, book: SurfaceBook, port: int) -> None:
        self._bus = bus
        self.book = book
        self._port = port
        # Where a capability request waits (the actor's nursery, once it runs).
        self.spawn: Callable[[Callable[[], Awaitable[None]]], None] | None = None
        self._capability_requests = 0
        self.tools = SurfaceToolRelay(bus, book)  # an MCP App's `tools/call`
        # An MCP App's document as split, by instance, with the (mtime, size) it was read at:
        # a page and each of its moved scripts are one read and one parse, not one apiece.
        self._split: dict[str, tuple[tuple[int, int], SplitDocument]] = {}
        self._mcp = McpRequests(bus)

    def headers(self, instance_id: str) -> dict[str, str]:
        files = self.book.files(instance_id)
        return surface_headers(self._port, instance_id, mcp_app=files is not None and files.mcp_app)

    def _refused(self, frame: SurfaceRequestFrame, code: str) -> None:
        """A bridge request refused: audited by its type and code, with the instance it is about."""
        record = user_record(
            SURFACE_REQUEST_REFUSED, frame.type, code=code, subject_id=frame.instance_id
        )
        self._bus.audit_refusal(record)

    async def file(self, instance_id: str, path: str) -> SurfaceFile | None:
        files = self.book.files(instance_id)
        if files is None:
            files = await self._ask_files(instance_id)
        if files is None:
            return None
        if files.mcp_app and (path == files.document or path.startswith(INLINE_DIR)):
            return await self._mcp_document(instance_id, files, path)
        if path.startswith(RESERVED_PREFIX):
            # The runtime's own files, never the app's: its bridge client alone.
            if path != SURFACE_CLIENT_URL:
                return None
            return SurfaceFile(SURFACE_CLIENT, "text/javascript")
        found = surface_file(files.web_root, path)
        if found is None:
            return None
        script = found[1].partition(";")[0] == "text/javascript"
        return SurfaceFile(found[0], found[1], cors=files.mcp_app and script)

    async def _mcp_document(
        self, instance_id: str, files: SurfaceFiles, path: str
    ) -> SurfaceFile | None:
        """An MCP App's document with its inline scripts moved out, or one of those."""
        found = surface_file(files.web_root, files.document)
        if found is None:
            return None
        split = await self._split_document(instance_id, found[0])
        if path == files.document:
            granted = self.book.take(instance_id, NETWORK_CAPABILITY, now=trio.current_time())
            csp = mcp_document_csp(self._port, instance_id, files.mcp_ui, granted=granted)
            return SurfaceFile(split.html, found[1], csp=csp)
        index = path.removeprefix(INLINE_DIR).removesuffix(".js")
        if not index.isdigit() or str(int(index)) != index or int(index) >= len(split.scripts):
            return None
        return SurfaceFile(split.scripts[int(index)], "text/javascript; charset=utf-8", cors=True)

    async def _split_document(self, instance_id: str, document: Path) -> SplitDocument:
        """The instance's MCP App document split, read again only once the file changed (a
        development app saved anew); what is kept is for instances with open Surfaces only."""
        stat = await trio.Path(document).stat()
        key = (stat.st_mtime_ns, stat.st_size)
        held = self._split.get(instance_id)
        if held is not None and held[0] == key:
            return held[1]
        prefix = f"/surfaces/{quote(instance_id, safe='')}/"
        split = split_inline_scripts(await trio.Path(document).read_bytes(), prefix)
        for gone in [i for i in self._split if self.book.files(i) is None]:
            del self._split[gone]
        self._split[instance_id] = (key, split)
        return split

    async def _ask_files(self, instance_id: str) -> SurfaceFiles | None:
        if self.book.surface(instance_id) is None:
            return None  # no open Surface of a live instance: focus is not even asked
        try:
            reply = await self._bus.request(
                "focus",
                SurfaceAssetsRequest(instance_id=instance_id),
                expect=SurfaceAssetsReply,
                timeout=ASK_TIMEOUT,
                retry=True,
            )
        except LineUpError:
            return None
        files = SurfaceFiles(
            reply.surface_id,
            Path(reply.web_root),
            reply.document,
            mcp_ui=reply.mcp_ui,
            mcp_app=reply.mcp_app,
            resources=reply.resources,
        )
        return files if self.book.remember(instance_id, files) else None

    async def request(self, frame: SurfaceRequestFrame, reply: Reply, *, limited: bool) -> None:
        code, params = self._check(frame, limited)
        if code is not None:
            self._refused(frame, code.value)
            reply(_answer(frame, error=code.value))
            return
        assert params is not None
        if isinstance(params, CapabilityParams | DownloadParams):
            self._capability(frame, params, reply)
            return
        if isinstance(params, ToolsCallParams):
            self.tools.call(frame, params, reply, lambda code: self._refused(frame, code))
            return
        try:
            result = await self._relay(frame, params)
        except Refused as exc:
            self._refused(frame, exc.code.value)
            reply(_answer(frame, error=exc.code.value))
            return
        except LineUpError as exc:
            reply(_answer(frame, error=exc.code.value))  # focus audits its own refusals
            return
        reply(_answer(frame, result=result))

    def _check(
        self, frame: SurfaceRequestFrame, limited: bool
    ) -> tuple[ErrorCode | None, BaseModel | None]:
        if limited:
            return ErrorCode.BRIDGE_RATE_LIMITED, None
        wrong = self.book.check(frame.instance_id, frame.surface_id)
        if wrong is not None:
            return wrong, None
        model = METHODS.get(frame.method)
        if model is None:
            return ErrorCode.BRIDGE_METHOD_UNKNOWN, None
        if params_size(frame.params) > MAX_SURFACE_PARAMS_BYTES:
            return ErrorCode.BRIDGE_MESSAGE_TOO_LARGE, None
        try:
            return None, model.model_validate(frame.params)
        except ValidationError:
            return ErrorCode.BRIDGE_PARAMS_INVALID, None

    def _capability(
        self, frame: SurfaceRequestFrame, params: CapabilityParams | DownloadParams, reply: Reply
    ) -> None:
        if self.spawn is None or self._capability_requests >= MAX_CAPABILITY_REQUESTS:
            code = ErrorCode.BRIDGE_RATE_LIMITED.value
            self._refused(frame, code)
            reply(_answer(frame, error=code))
            return
        self._capability_requests += 1

        async def relay() -> None:
            try:
                if isinstance(params, DownloadParams):
                    reply(_answer(frame, result=await self._download(frame, params)))
                    return
                result = await self._bus.request(
                    "gateway",
                    SurfaceCapabilityRequest(
                        request_id=frame.request_id,
                        instance_id=frame.instance_id,
                        capability=params.capability,
                        purpose=params.purpose,
                        input=params.input,
                    ),
                    expect=CapabilityResult,
                    timeout=CAPABILITY_TIMEOUT,
                    retry=True,  # the same request_id again: the same result, nothing new
                )
            except LineUpError as exc:
                reply(_answer(frame, error=exc.code.value))
                return
            finally:
                self._capability_requests -= 1
            if result.capability == NETWORK_CAPABILITY:  # before the Shell hears the answer
                granted = result.status == "completed"
                now = trio.current_time()
                self.book.grant(frame.instance_id, NETWORK_CAPABILITY, granted=granted, now=now)
            reply(_answer(frame, result=result.model_dump(mode="json", exclude={"type"})))

        self.spawn(relay)

    def _own_scope(self, frame: SurfaceRequestFrame) -> str:
        app_scope = self.book.app_scope(frame.instance_id)
        if app_scope is None:  # checked just before: only a view gone meanwhile
            raise LineUpError(ErrorCode.SURFACE_NOT_FOUND, "no open Surface")
        return app_scope

    async def _download(self, frame: SurfaceRequestFrame, params: DownloadParams) -> dict[str, Any]:
        return await self._mcp.download(
            frame.instance_id, self._own_scope(frame), frame.request_id, params
        )

    async def _mcp_request(self, frame: SurfaceRequestFrame, params: BaseModel) -> dict[str, Any]:
        """An MCP App's `resources/list|read` (its own app's) or `ui/update-model-context`."""
        app_scope = self._own_scope(frame)
        if isinstance(params, ContextParams):
            return await self._mcp.context(frame.instance_id, app_scope, frame.request_id, params)
        files = self.book.files(frame.instance_id) or await self._ask_files(frame.instance_id)
        if files is None:
            raise LineUpError(ErrorCode.SURFACE_NOT_FOUND, "no open Surface")
        if isinstance(params, ReadParams):
            return await self._mcp.read(app_scope, files.web_root, files.resources, params.uri)
        return resource_list(app_scope, files.resources)

    async def _relay(self, frame: SurfaceRequestFrame, params: BaseModel) -> dict[str, Any]:
        instance_id, surface_id = frame.instance_id, frame.surface_id
        if frame.method in MCP_METHODS:
            return await self._mcp_request(frame, params)
        app_method = APP_METHODS.get(frame.method)
        if app_method is not None:
            answered = await self._bus.request(
                "focus",
                SurfaceAppRequest(
                    instance_id=instance_id,
                    surface_id=surface_id,
                    method=app_method,
                    action=params.action if isinstance(params, ActionParams) else None,
                ),
                expect=SurfaceAppReply,
                timeout=QUESTION_TIMEOUT,  # an action may start an app's process
                retry=app_method != "action",  # reading changes nothing
            )
            return answered.result
        if isinstance(params, UiRequestParams):
            return await self._ask_user(frame, params)
        if isinstance(params, AgentMessagesParams):  # the router's (`_surface_agent_messages`)
            app_scope = self.book.app_scope(instance_id)
            if app_scope is None:  # checked just before: only a view gone meanwhile
                raise LineUpError(ErrorCode.SURFACE_NOT_FOUND, "no open Surface")
            return await relay_agent_messages(self._bus, app_scope, instance_id, surface_id, params)
        if isinstance(params, EventParams):
            await self._bus.request(
                "focus",
                SurfaceEventRequest(
                    instance_id=instance_id,
                    surface_id=surface_id,
                    name=params.name,
                    data=params.data,
                ),
                expect=SurfaceAccepted,
                timeout=ASK_TIMEOUT,
            )
            return {}
        if isinstance(params, ReplaceParams):
            body = SurfaceSessionDataRequest(
                instance_id=instance_id,
                surface_id=surface_id,
                op="replace",
                data=params.data,
                expected_revision=params.expected_revision,
            )
            done = await self._bus.request(
                "focus", body, expect=SurfaceAccepted, timeout=ASK_TIMEOUT
            )
            return {"revision": done.revision}
        op: Literal["get", "subscribe"] = (
            "subscribe" if frame.method.endswith("/subscribe") else "get"
        )
        got = await self._bus.request(
            "focus",
            SurfaceSessionDataRequest(instance_id=instance_id, surface_id=surface_id, op=op),
            expect=SurfaceAccepted,
            timeout=ASK_TIMEOUT,
            retry=True,  # reading (and subscribing again) changes nothing
        )
        return {"data": got.data, "revision": got.revision}

    async def _ask_user(
        self, frame: SurfaceRequestFrame, params: UiRequestParams
    ) -> dict[str, Any]:
        """A Surface's question: recorded by the router as its app's own (its card shows where
        that app's questions do); the Shell's bridge tells the Surface its end."""
        app_scope = self.book.app_scope(frame.instance_id)
        if app_scope is None:  # checked just before: only a view gone meanwhile
            raise LineUpError(ErrorCode.SURFACE_NOT_FOUND, "no open Surface")
        asked = await self._bus.request(
            "router",
            SurfaceAskRequest(
                instance_id=frame.instance_id,
                app_scope=app_scope,
                surface_id=frame.surface_id,
                request=params.request.model_dump(mode="json", exclude_none=True),
                request_id=frame.request_id,
            ),
            expect=SurfaceAskReply,
            timeout=QUESTION_TIMEOUT,
            retry=True,  # idempotent by (instance, request_id): a retry asks nothing new
        )
        return {"interaction_id": asked.interaction.interaction_id}


def _answer(
    frame: SurfaceRequestFrame, *, result: dict[str, Any] | None = None, error: str | None = None
) -> ShellSurfaceReply:
    return ShellSurfaceReply(
        request_id=frame.request_id,
        instance_id=frame.instance_id,
        surface_id=frame.surface_id,
        result=result if error is None else None,
        error=None if error is None else SurfaceError(code=error),
    )
