"""What the hostbridge knows of the Surfaces the Shells mount (issue 13), and how it checks them.

A Surface is an instance's view of kind `lineup.surface` (focus makes it while the app has one
open): the Shell frames `/surfaces/{instance_id}/index.html` in a sandboxed iframe, and the
hostbridge serves those files from the app package's `web/` folder (an MCP App's framed
`index.html` is its entrypoint's `document`: an MCP server's UIs share one `web/` folder,
`lineup.sdk.mcp_ui`), which it asks focus for
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
(`_surface_book`, with the files and the headers) says whether one names a live instance whose
current view is that Surface, and `METHODS` (`_surface_params`) holds the params model of each
method the hostbridge relays; `SurfaceRelay` (the server's `SurfaceHost`) checks each and asks
focus. Every refusal is answered with its code, to the Shell
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
its own; a read of its server's own resource is relayed as a `tools/call` is); the
hostbridge's own refusals of them are audited here like every other.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Final, Literal
from urllib.parse import quote

import trio
from pydantic import BaseModel, ValidationError

from lineup.actors.focus.messages import (
    SurfaceAccepted,
    SurfaceAppReply,
    SurfaceAppRequest,
    SurfaceAssetsReply,
    SurfaceAssetsRequest,
    SurfaceEventRequest,
    SurfaceSessionDataRequest,
)
from lineup.actors.gateway.messages import CapabilityResult, SurfaceCapabilityRequest
from lineup.actors.kernel import Bus, ErrorCode, LineUpError
from lineup.actors.router.messages import SurfaceAskReply, SurfaceAskRequest
from lineup.sdk.manifest import SURFACE_CLIENT, SURFACE_CLIENT_URL
from lineup.sdk.mcp_grants import NETWORK_CAPABILITY

from ._audit import user_record
from ._mcp_document import INLINE_DIR, SplitDocument, split_inline_scripts
from ._server import Reply, SurfaceFile
from ._surface_agent_messages import (
    AgentMessagesParams,
    relay_agent_messages,
)
from ._surface_book import (
    RESERVED_PREFIX,
    SurfaceBook,
    SurfaceFiles,
    mcp_document_csp,
    surface_file,
    surface_headers,
)
from ._surface_mcp import (
    MCP_METHODS,
    ContextParams,
    DownloadParams,
    McpRequests,
    ReadParams,
    Refused,
    resource_list,
    server_resource,
)
from ._surface_params import (
    APP_METHODS,
    MAX_SURFACE_PARAMS_BYTES,
    METHODS,
    ActionParams,
    CapabilityParams,
    EventParams,
    ReplaceParams,
    UiRequestParams,
    params_size,
)
from ._surface_tools import SurfaceToolRelay, ToolsCallParams
from .shell_protocol import SurfaceRequestFrame

__all__ = [
    "SURFACE_REQUEST_REFUSED",
    "SurfaceRelay",
]

SURFACE_REQUEST_REFUSED: Final = "hostbridge.surface_request_refused"  # its audit event
ASK_TIMEOUT: Final = 3.0
QUESTION_TIMEOUT: Final = ASK_TIMEOUT * 5  # the router records a question in a few steps
# A capability request may wait on the prompt (a minute by default) and then on a provider the
# user runs (a file picker): the gateway ends both by its own deadlines well before this.
CAPABILITY_TIMEOUT: Final = 300.0
MAX_CAPABILITY_REQUESTS: Final = 16  # relayed at once, from every Shell

# The document the Shell frames every Surface at (`DOCUMENT` in web/js/components/surface.js).
FRAMED_DOCUMENT: Final = "index.html"


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
        if files.mcp_app and path == FRAMED_DOCUMENT:
            path = files.document
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
            reply(frame.answer(error=code.value))
            return
        assert params is not None
        if isinstance(params, CapabilityParams | DownloadParams):
            self._capability(frame, params, reply)
            return
        if isinstance(params, ToolsCallParams):
            self.tools.call(frame, params, reply, lambda code: self._refused(frame, code))
            return
        if isinstance(params, ReadParams) and await self._of_server(frame, params.uri):
            self.tools.read(frame, params.uri, reply, lambda code: self._refused(frame, code))
            return
        try:
            result = await self._relay(frame, params)
        except Refused as exc:
            self._refused(frame, exc.code.value)
            reply(frame.answer(error=exc.code.value))
            return
        except LineUpError as exc:
            reply(frame.answer(error=exc.code.value))  # focus audits its own refusals
            return
        reply(frame.answer(result=result))

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
            reply(frame.answer(error=code))
            return
        self._capability_requests += 1

        async def relay() -> None:
            try:
                if isinstance(params, DownloadParams):
                    reply(frame.answer(result=await self._download(frame, params)))
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
                reply(frame.answer(error=exc.code.value))
                return
            finally:
                self._capability_requests -= 1
            if result.capability == NETWORK_CAPABILITY:  # before the Shell hears the answer
                granted = result.status == "completed"
                now = trio.current_time()
                self.book.grant(frame.instance_id, NETWORK_CAPABILITY, granted=granted, now=now)
            reply(frame.answer(result=result.model_dump(mode="json", exclude={"type"})))

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

    async def _of_server(self, frame: SurfaceRequestFrame, uri: str) -> bool:
        """Whether a page's `resources/read` is of its app's server (`server_resource`)."""
        app_scope = self.book.app_scope(frame.instance_id)
        files = self.book.files(frame.instance_id) or await self._ask_files(frame.instance_id)
        if app_scope is None or files is None:
            return False  # the view went meanwhile: answered as today
        return server_resource(app_scope, files.resources, uri)

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
