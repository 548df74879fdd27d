"""An MCP App's requests that need the runtime (issue 30): `resources/list`, `resources/read`,
`ui/update-model-context` and `ui/download-file`, relayed by the Shell's bridge as
`surface.request` and checked again here (`_surfaces.SurfaceRelay` hands them over).

Theory of operation
-------------------
An app's resources are its MCP App UI documents (`lineup.sdk.mcp_apps`): `ui://<app_scope>/
<entrypoint id>` for each `surface` entrypoint of its manifest that declares `mcp_app`, of type
`text/html;profile=mcp-app`, as focus lists them with the Surface's files
(`SurfaceAssetsReply.resources`). A Surface lists and reads its own app's only: a URI of
another app, or any `ui://` URI this app does not have, is `resource_not_found` (JSON-RPC
`-32002`, the MCP spec's code, which the Shell's bridge gives it), exactly as a missing one. A
read answers the document as the app ships it (text, or base64 if it is not UTF-8), at most
`MAX_RESOURCE_BYTES` (`resource_too_large`): the UI that runs is the signed one, never what a
server would serve later.

Any other URI (`server_resource`) is a resource of the app's MCP server, read live: relayed
to focus (`_surface_tools`), which refuses it `resource_not_found` for an app not of kind
`mcp` (it has no server) and otherwise has the app's process ask its server `resources/read`
(`lineup.sdk.mcp_apps`): its contents, text or blob, at most `MAX_LIVE_RESOURCE_BYTES` of
JSON (`resource_too_large`); the server's error answer is `resource_not_found`, no answer
within `UI_RESOURCE_READ_TIMEOUT_S` `deadline_exceeded`. `resources/list` lists the UI
documents only.

`ui/update-model-context` goes to the router (`router.ui.surface.context`), which tells the
Agent in the instance's app sub-session; the text blocks and the structured content together
are at most `MAX_MODEL_CONTEXT_BYTES` of compact JSON (`model_context_too_large`), and an
instance updates at most `CONTEXT_BURST` times at once, then one every `1 / CONTEXT_PER_S`
seconds (`rate_limited`).

`ui/download-file` takes embedded resources only (at most `MAX_DOWNLOAD_FILES`; a
`resource_link` is `bridge_params_invalid`): each one, in order, becomes an artifact of the
app that the user saves through `artifact.save` (`gateway.ui.surface.download`), the user's
own prompt deciding. The user's no (or a prompt left to expire, or a policy that denies) is a
result, `{"isError": true}`, as `ui/open-link`'s is; any other failure is its code. Its size
is the bridge's (a Shell frame is at most 64 KiB), and the artifact's own bounds stand.

Nothing here logs or audits what a request carries: the refusals are audited by their code
(`_surfaces`), the updates and downloads by the router and the gateway.
"""

import base64
import json
import re
from pathlib import Path
from typing import Annotated, Any, Final, Literal
from urllib.parse import unquote, urlsplit

import trio
from pydantic import BaseModel, ConfigDict, Field, model_validator

from lineup.actors.focus.messages import SurfaceResource
from lineup.actors.gateway.messages import CapabilityResult, SurfaceDownloadRequest
from lineup.actors.kernel import Bus, ErrorCode, LineUpError
from lineup.actors.router.messages import SurfaceContextReply, SurfaceContextRequest
from lineup.sdk.mcp_apps import MCP_APP_MIME_TYPE, resource_uri

from ._web import safe_file

__all__ = [
    "CONTEXT_BURST",
    "MAX_DOWNLOAD_FILES",
    "MAX_MODEL_CONTEXT_BYTES",
    "MAX_RESOURCE_BYTES",
    "MCP_METHODS",
    "ContextParams",
    "DownloadParams",
    "McpRequests",
    "ReadParams",
    "Refused",
    "server_resource",
]

MAX_RESOURCE_BYTES: Final = 512 * 1024  # a UI document a Surface may read
MAX_MODEL_CONTEXT_BYTES: Final = 16 * 1024  # an app's context, compact JSON
CONTEXT_PER_S: Final = 0.5
CONTEXT_BURST: Final = 10
MAX_DOWNLOAD_FILES: Final = 4
MAX_BLOCKS: Final = 32
MAX_URI: Final = 2048
ASK_TIMEOUT: Final = 15.0
DOWNLOAD_TIMEOUT: Final = 300.0  # the prompt, then the save: the gateway ends both before
# The user's no, by the result's code: at the prompt (Deny, Escape, left to expire) or by the
# user's own policy; `capability_denied` (an app that does not declare it) is no user's no.
_DECLINED: Final = frozenset(
    {"cancelled_by_user", "permission_denied", "operation_expired", "policy_denied"}
)
_UNSAFE_NAME: Final = re.compile(r"[^A-Za-z0-9._ -]")


class _Params(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True, populate_by_name=True)


Meta = Annotated[dict[str, Any] | None, Field(default=None, alias="_meta")]


class ListParams(_Params):
    """`resources/list`: every resource at once, so no cursor is ever valid (one is
    `bridge_params_invalid`)."""

    meta: Meta


class ReadParams(_Params):
    uri: Annotated[str, Field(min_length=1, max_length=MAX_URI)]
    meta: Meta


class TextBlock(_Params):
    type: Literal["text"]
    text: str
    annotations: dict[str, Any] | None = None
    meta: Meta


class ContextParams(_Params):
    """`ui/update-model-context`: text blocks and structured content (both may be absent: the
    app clears what it said)."""

    content: Annotated[tuple[TextBlock, ...], Field(max_length=MAX_BLOCKS)] = ()
    structured_content: dict[str, Any] | None = Field(default=None, alias="structuredContent")
    meta: Meta


class ResourceContents(_Params):
    uri: Annotated[str, Field(min_length=1, max_length=MAX_URI)]
    mime_type: Annotated[str, Field(min_length=1, max_length=100, alias="mimeType")]
    text: str | None = None
    blob: str | None = None
    meta: Meta

    @model_validator(mode="after")
    def _one_of(self) -> "ResourceContents":
        if (self.text is None) == (self.blob is None):
            raise ValueError("exactly one of text, blob")
        return self


class EmbeddedResource(_Params):
    type: Literal["resource"]
    resource: ResourceContents
    annotations: dict[str, Any] | None = None
    meta: Meta


class DownloadParams(_Params):
    """`ui/download-file`: the files, embedded (a `resource_link` is not taken)."""

    contents: Annotated[
        tuple[EmbeddedResource, ...], Field(min_length=1, max_length=MAX_DOWNLOAD_FILES)
    ]
    meta: Meta


MCP_METHODS: Final[dict[str, type[_Params]]] = {
    "resources/list": ListParams,
    "resources/read": ReadParams,
    "ui/update-model-context": ContextParams,
    "ui/download-file": DownloadParams,
}


class Refused(LineUpError):
    """The hostbridge's own refusal of an MCP App's request (audited by `_surfaces`)."""


def file_name(uri: str) -> str:
    """A download's file name: the last segment of its URI, kept to plain characters."""
    path = unquote(urlsplit(uri).path or uri)
    name = _UNSAFE_NAME.sub("_", path.rstrip("/").rsplit("/", 1)[-1]).strip(" .")
    return name[:128] or "download"


def resource_list(app_scope: str, resources: tuple[SurfaceResource, ...]) -> dict[str, Any]:
    """The MCP `ListResourcesResult` of an app's resources."""
    listed = []
    for r in resources:
        entry: dict[str, Any] = {
            "uri": resource_uri(app_scope, r.entrypoint),
            "name": r.entrypoint,
            "mimeType": MCP_APP_MIME_TYPE,
        }
        if r.ui:
            entry["_meta"] = {"ui": r.ui}
        listed.append(entry)
    return {"resources": listed}


def server_resource(app_scope: str, resources: tuple[SurfaceResource, ...], uri: str) -> bool:
    """Whether a page's `resources/read` of `uri` is its app's server's (the module's
    docstring): not one of its UI documents, and not `ui://` (those are the bundle's alone)."""
    if uri[:3].lower() == "ui:":
        return False
    return all(resource_uri(app_scope, r.entrypoint) != uri for r in resources)


class McpRequests:
    """The four requests, for `_surfaces.SurfaceRelay` (see the module's docstring)."""

    def __init__(self, bus: Bus) -> None:
        self._bus = bus
        self._tokens: dict[str, tuple[float, float]] = {}  # instance → (tokens, at)

    async def read(
        self,
        app_scope: str,
        web_root: Path,
        resources: tuple[SurfaceResource, ...],
        uri: str,
    ) -> dict[str, Any]:
        """The MCP `ReadResourceResult` of one of the app's resources. Raises `Refused`:
        `resource_not_found`, `resource_too_large`."""
        found = next((r for r in resources if resource_uri(app_scope, r.entrypoint) == uri), None)
        located = None if found is None else safe_file(web_root, found.document, _HTML)
        if found is None or located is None:
            raise Refused(ErrorCode.RESOURCE_NOT_FOUND, "no such resource of this app")
        path = trio.Path(located[0])
        try:
            if (await path.stat()).st_size > MAX_RESOURCE_BYTES:
                raise Refused(ErrorCode.RESOURCE_TOO_LARGE, "over MAX_RESOURCE_BYTES")
            data = await path.read_bytes()
        except OSError:
            raise Refused(ErrorCode.RESOURCE_NOT_FOUND, "not readable") from None
        if len(data) > MAX_RESOURCE_BYTES:  # it grew meanwhile
            raise Refused(ErrorCode.RESOURCE_TOO_LARGE, "over MAX_RESOURCE_BYTES")
        content: dict[str, Any] = {"uri": uri, "mimeType": MCP_APP_MIME_TYPE}
        try:
            content["text"] = data.decode("utf-8")
        except UnicodeDecodeError:
            content["blob"] = base64.b64encode(data).decode()
        if found.ui:
            content["_meta"] = {"ui": found.ui}
        return {"contents": [content]}

    def _within_rate(self, instance_id: str) -> bool:
        now = trio.current_time()
        tokens, at = self._tokens.get(instance_id, (float(CONTEXT_BURST), now))
        tokens = min(float(CONTEXT_BURST), tokens + (now - at) * CONTEXT_PER_S)
        if tokens < 1:
            self._tokens[instance_id] = (tokens, now)
            return False
        self._tokens[instance_id] = (tokens - 1, now)
        if len(self._tokens) > 1024:  # forget the oldest: an instance long gone
            del self._tokens[next(iter(self._tokens))]
        return True

    async def context(
        self, instance_id: str, app_scope: str, request_id: str, params: ContextParams
    ) -> dict[str, Any]:
        """The app's context to the router, for the Agent. Raises `Refused`
        (`model_context_too_large`, `rate_limited`), or the router's refusal."""
        texts = tuple(block.text for block in params.content)
        size = len(json.dumps([texts, params.structured_content], separators=(",", ":")).encode())
        if size > MAX_MODEL_CONTEXT_BYTES:
            raise Refused(ErrorCode.MODEL_CONTEXT_TOO_LARGE, "over MAX_MODEL_CONTEXT_BYTES")
        if not self._within_rate(instance_id):
            raise Refused(ErrorCode.RATE_LIMITED, "context updates too often")
        await self._bus.request(
            "router",
            SurfaceContextRequest(
                instance_id=instance_id,
                app_scope=app_scope,
                request_id=request_id,
                content=texts,
                structured_content=params.structured_content,
            ),
            expect=SurfaceContextReply,
            timeout=ASK_TIMEOUT,
            retry=True,  # idempotent by (instance, request_id)
        )
        return {}

    async def download(
        self, instance_id: str, app_scope: str, request_id: str, params: DownloadParams
    ) -> dict[str, Any]:
        """Each file as an artifact the user saves (see the module's docstring): `{}` once all
        are saved, `{"isError": true}` at the user's first no. Raises the gateway's code."""
        for index, block in enumerate(params.contents):
            resource = block.resource
            if resource.blob is not None:
                content_b64 = resource.blob
            else:
                content_b64 = base64.b64encode((resource.text or "").encode()).decode()
            result = await self._bus.request(
                "gateway",
                SurfaceDownloadRequest(
                    request_id=f"{request_id}:{index}"[:200],
                    instance_id=instance_id,
                    app_scope=app_scope,
                    name=file_name(resource.uri),
                    media_type=resource.mime_type.split(";")[0].strip().lower(),
                    content_b64=content_b64,
                ),
                expect=CapabilityResult,
                timeout=DOWNLOAD_TIMEOUT,
                retry=True,  # the same request_id again: the same result, nothing new
            )
            if result.status != "completed" and result.code in _DECLINED:
                return {"isError": True}
            if result.status != "completed":
                code = result.code or ErrorCode.PROVIDER_FAILED.value
                raise LineUpError(_code(code), "the download failed")
        return {}


_HTML: Final = {".html": "text/html; charset=utf-8"}


def _code(value: str) -> ErrorCode:
    try:
        return ErrorCode(value)
    except ValueError:
        return ErrorCode.INTERNAL_ERROR
