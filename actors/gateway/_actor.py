"""The gateway actor: runtime-owned artifacts and the capability gateway (seed 004 §6.3,
DESIGN §4). The capabilities are `_capabilities` (the handlers here only delegate).

Theory of operation. An app asks `gateway.sdk.artifact.create` with its bytes (base64); the
gateway checks the media type, the name, the bytes and their size, names the artifact from the
app and its request id, and under that id's lock: answers a repeat with the artifact already
recorded; checks the instance is one of the app's live ones (focus) and the app's quota (the
store); writes the content under `<data_dir>/artifacts/` (atomically, fsynced); only then
records its row (the store checks the quota again in that transaction); and tells the
hostbridge, whose Shells show the artifact's card. An app reads and lists only its own
artifacts (another's is `artifact_not_found`, exactly as a missing one); the hostbridge reads
any (the user owns the device). Every read checks the bytes against their recorded sha256.

Every refusal of an app's request is audited by its type and code; no audit row and no log
line holds an artifact's name or any of its content.
"""

from __future__ import annotations

import base64
import logging
from pathlib import Path
from typing import Any, Final

import trio

from lineup.actors.focus.messages import (
    CapabilityContextReply,
    CapabilityContextRequest,
    FindInstanceRequest,
    InstanceReply,
)
from lineup.actors.kernel import Actor, ActorContext, ActorKind
from lineup.actors.kernel.actor import handles
from lineup.actors.kernel.audit import AuditRecord
from lineup.actors.kernel.bus import Envelope
from lineup.actors.kernel.errors import ErrorCode, LineUpError
from lineup.actors.kernel.identity import app_scope_of
from lineup.actors.store import messages as store
from lineup.hostbridge.messages import ArtifactCreatedEvent, CapabilityGatewayStartedEvent
from lineup.sdk import protocol as sdk
from lineup.sdk.mcp_network import NETWORK_CAPABILITY as MCP_NETWORK
from lineup.sdk.protocol import MAX_ARTIFACT_BYTES

from . import _files as files
from ._artifacts import (
    MAX_APP_ARTIFACT_BYTES,
    MAX_APP_ARTIFACTS,
    artifact_id_of,
    check_media_type,
    check_name,
    decode_content,
    digest,
)
from ._capabilities import Asked, CapabilityGate
from ._capability_state import CapabilityConfig
from ._mcp_net import McpConnections
from .messages import (
    ArtifactsListReply,
    ArtifactsListRequest,
    CapabilityPendingReply,
    CapabilityPendingRequest,
    GrantSetRequest,
    GrantsListReply,
    GrantsListRequest,
    PromptAnswerRequest,
    ProviderDoneRequest,
    SurfaceCapabilityRequest,
    SurfaceDownloadRequest,
    UiAccepted,
    UiArtifactReadRequest,
)

__all__ = ["GatewayActor"]

log = logging.getLogger("lineup.gateway")

STORE_TIMEOUT: Final = 10.0
FOCUS_TIMEOUT: Final = 10.0
NOTIFY_TIMEOUT: Final = 2.0
LOCK_STRIPES: Final = 64  # creates of the same id wait for each other; others rarely do
# A request without a deadline (never from the bus, which always sends one) waits at most this.
DEFAULT_CALLER_WAIT_S: Final = 300.0
# The prompt's purpose for an MCP App's `ui/download-file`: the runtime's words around the
# file's name (shown as text, never audited; the prompt quotes it as the app's request).
DOWNLOAD_PURPOSE: Final = "Save {name}, a file from this app, as a download"
# Focus's answers that are not about the instance: the caller may retry.
_TRANSIENT: Final = frozenset(
    {ErrorCode.ACTOR_RESTARTED, ErrorCode.ACTOR_UNAVAILABLE, ErrorCode.DEADLINE_EXCEEDED}
)


def _info(row: store.ArtifactRow) -> sdk.ArtifactInfo:
    return sdk.ArtifactInfo(
        artifact_id=row.artifact_id,
        app_scope=row.app_scope,
        instance_id=row.instance_id,
        name=row.name,
        media_type=row.media_type,
        size=row.size,
        sha256=row.sha256,
        created_at=row.created_at,
    )


class GatewayActor(Actor):
    """Serves `gateway.sdk.artifact.*` (MiniApps) and `gateway.ui.*` (the hostbridge)."""

    kind = ActorKind.GATEWAY

    def __init__(self, ctx: ActorContext) -> None:
        super().__init__(ctx)
        conf: dict[str, Any] = dict(ctx.config.get("artifacts") or {})
        self._root = Path(ctx.data_dir) / files.ARTIFACTS_DIR
        self._max_app_bytes = int(conf.get("max_app_bytes", MAX_APP_ARTIFACT_BYTES))
        self._max_app_count = int(conf.get("max_app_count", MAX_APP_ARTIFACTS))
        self._locks = [trio.Lock() for _ in range(LOCK_STRIPES)]
        self._nursery: trio.Nursery | None = None
        self.capabilities = CapabilityGate(
            self.bus,
            ctx.identity.name,
            CapabilityConfig.from_config(ctx.config.get("capabilities")),
            self,
            self._soon,
        )
        self.mcp_net = McpConnections(self.bus, ctx.identity.name)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        removed = await trio.to_thread.run_sync(files.sweep_temporary, self._root)
        if removed:
            log.info("gateway.artifacts_swept count=%d", removed)
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            # What a killed gateway left waiting (`_journal`); requests wait for it.
            nursery.start_soon(self._restore)
            try:
                task_status.started()
                await trio.sleep_forever()
            finally:
                # Shutting down: a request still being answered may end a prompt, and its
                # fast-path tell has nowhere to run. Dropping it is right: the hostbridge
                # stops too, and a new one asks what is pending.
                self._nursery = None

    async def _restore(self) -> None:
        await self.capabilities.journal.restore()
        # The Shells may show prompts a killed gateway told of: the hostbridge lists again.
        code = await self.bus.tell(
            "hostbridge", CapabilityGatewayStartedEvent(), timeout=NOTIFY_TIMEOUT
        )
        if code is not None:
            log.info("gateway.start_untold code=%s", code.value)

    def _soon(self, fn: Any) -> None:
        if self._nursery is not None:
            self._nursery.start_soon(fn)

    # ------------------------------------------------------------------ helpers

    async def _store(self, request: Any, expect: type[Any]) -> Any:
        return await self.bus.request(
            "store", request, expect=expect, timeout=STORE_TIMEOUT, retry=True
        )

    def _refused(self, env: Envelope, code: ErrorCode, subject_id: str | None = None) -> None:
        """Audit a refusal of an app's request: its type and code (and the artifact's id
        where there is one), never what it carried."""
        self.bus.audit_refusal(
            AuditRecord(
                event="gateway.artifact_refused",
                actor=self.ctx.identity.name,
                peer=env.sender.name,
                code=code.value,
                message_type=env.body.TYPE,
                subject_id=subject_id,
            )
        )

    def _lock(self, artifact_id: str) -> trio.Lock:
        return self._locks[int(artifact_id[-8:], 16) % LOCK_STRIPES]

    async def _check_instance(self, scope: str, instance_id: str) -> None:
        try:
            await self.bus.request(
                "focus",
                FindInstanceRequest(app_scope=scope, instance_id=instance_id),
                expect=InstanceReply,
                timeout=FOCUS_TIMEOUT,
                retry=True,
            )
        except LineUpError as exc:
            if exc.code in _TRANSIENT:
                raise
            raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, "not a live instance") from exc

    async def content(self, row: store.ArtifactRow, message_type: str) -> sdk.ArtifactContent:
        """The artifact's bytes, checked against their recorded size and sha256."""
        data = await trio.to_thread.run_sync(
            files.read_content, self._root, row.artifact_id, MAX_ARTIFACT_BYTES
        )
        if data is None or len(data) != row.size or digest(data) != row.sha256:
            self.bus.audit(
                AuditRecord(
                    event="gateway.artifact_corrupt",
                    actor=self.ctx.identity.name,
                    peer=row.app_scope,
                    code=ErrorCode.INTERNAL_ERROR.value,
                    message_type=message_type,
                    subject_id=row.artifact_id,
                )
            )
            log.error("gateway.artifact_corrupt id=%s", row.artifact_id)
            raise LineUpError(ErrorCode.INTERNAL_ERROR, "the artifact's content does not match")
        return sdk.ArtifactContent(info=_info(row), content_b64=base64.b64encode(data).decode())

    async def row(self, artifact_id: str) -> store.ArtifactRow | None:
        reply: store.ArtifactGetReply = await self._store(
            store.ArtifactGetRequest(artifact_id=artifact_id), store.ArtifactGetReply
        )
        return reply.artifact

    # ------------------------------------------------------------------ apps

    @handles(sdk.ArtifactCreateRequest)
    async def on_create(self, msg: sdk.ArtifactCreateRequest, env: Envelope) -> sdk.ArtifactInfo:
        scope = app_scope_of(env.sender)
        try:
            return await self.create(scope, msg)
        except LineUpError as exc:
            if exc.code not in _TRANSIENT:
                self._refused(env, exc.code)
            raise

    async def create(self, scope: str, msg: sdk.ArtifactCreateRequest) -> sdk.ArtifactInfo:
        """Make (or find, for a repeat of its request id) an artifact of `scope`'s: an app's
        `gateway.sdk.artifact.create`, and the file a user picked for `file.open`."""
        check_media_type(msg.media_type)
        check_name(msg.name)
        data = decode_content(msg.content_b64)
        artifact_id = artifact_id_of(scope, msg.request_id)
        async with self._lock(artifact_id):
            found = await self.row(artifact_id)
            if found is not None:
                return _info(found)  # a retry: the content is on disk since its row is
            await self._check_instance(scope, msg.instance_id)
            usage: store.ArtifactUsageReply = await self._store(
                store.ArtifactUsageRequest(app_scope=scope), store.ArtifactUsageReply
            )
            if (
                usage.bytes + len(data) > self._max_app_bytes
                or usage.count + 1 > self._max_app_count
            ):
                raise LineUpError(ErrorCode.QUOTA_EXCEEDED, "the app's artifacts are at quota")
            await trio.to_thread.run_sync(files.write_content, self._root, artifact_id, data)
            record = store.ArtifactCreateRequest(
                artifact_id=artifact_id,
                app_scope=scope,
                instance_id=msg.instance_id,
                name=msg.name,
                media_type=msg.media_type,
                size=len(data),
                sha256=digest(data),
                max_app_bytes=self._max_app_bytes,
                max_app_count=self._max_app_count,
            )
            try:
                made: store.ArtifactCreateReply = await self._store(
                    record, store.ArtifactCreateReply
                )
            except LineUpError as exc:
                if exc.code is ErrorCode.QUOTA_EXCEEDED:  # lost a race with another create
                    await trio.to_thread.run_sync(files.remove_content, self._root, artifact_id)
                raise
        info = _info(made.artifact)
        if made.created:
            # A fast path only: a Shell that misses it gets the card in its next greeting.
            code = await self.bus.tell(
                "hostbridge", ArtifactCreatedEvent(artifact=info), timeout=NOTIFY_TIMEOUT
            )
            if code is not None:
                log.info("gateway.artifact_untold code=%s", code.value)
        return info

    @handles(sdk.ArtifactReadRequest)
    async def on_read(self, msg: sdk.ArtifactReadRequest, env: Envelope) -> sdk.ArtifactContent:
        scope = app_scope_of(env.sender)
        row = await self.row(msg.artifact_id)
        if row is None or row.app_scope != scope:
            # Another app's is answered exactly as a missing one.
            self._refused(env, ErrorCode.ARTIFACT_NOT_FOUND, msg.artifact_id)
            raise LineUpError(ErrorCode.ARTIFACT_NOT_FOUND, "no such artifact")
        return await self.content(row, env.body.TYPE)

    @handles(sdk.ArtifactListRequest)
    async def on_list(self, msg: sdk.ArtifactListRequest, env: Envelope) -> sdk.ArtifactListReply:
        scope = app_scope_of(env.sender)
        reply: store.ArtifactListReply = await self._store(
            store.ArtifactListRequest(
                app_scope=scope, instance_id=msg.instance_id, limit=msg.limit
            ),
            store.ArtifactListReply,
        )
        return sdk.ArtifactListReply(artifacts=tuple(_info(row) for row in reply.artifacts))

    # ------------------------------------------------------------------ the user (hostbridge)

    @handles(UiArtifactReadRequest)
    async def on_ui_read(self, msg: UiArtifactReadRequest, env: Envelope) -> sdk.ArtifactContent:
        row = await self.row(msg.artifact_id)
        if row is None:
            raise LineUpError(ErrorCode.ARTIFACT_NOT_FOUND, "no such artifact")
        return await self.content(row, env.body.TYPE)

    @handles(ArtifactsListRequest)
    async def on_ui_list(self, msg: ArtifactsListRequest, env: Envelope) -> ArtifactsListReply:
        if msg.recent == 0:
            return ArtifactsListReply(artifacts=())
        reply: store.ArtifactListReply = await self._store(
            store.ArtifactListRequest(limit=msg.recent), store.ArtifactListReply
        )
        return ArtifactsListReply(artifacts=tuple(_info(row) for row in reply.artifacts))

    # ------------------------------------------------------------------ capabilities

    def _asked(
        self,
        env: Envelope,
        msg: sdk.CapabilityRequest | SurfaceCapabilityRequest,
        scope: str | None,
        key: str,
    ) -> Asked:
        wait = env.deadline_ms / 1000 if env.deadline_ms is not None else DEFAULT_CALLER_WAIT_S
        return Asked(
            key=(key, msg.request_id),
            scope=scope,
            request_id=msg.request_id,
            instance_id=msg.instance_id,
            capability=msg.capability,
            purpose=msg.purpose,
            input=msg.input,
            deadline=trio.current_time() + wait,
        )

    @handles(sdk.CapabilityRequest)
    async def on_capability(
        self, msg: sdk.CapabilityRequest, env: Envelope
    ) -> sdk.CapabilityResult:
        scope = app_scope_of(env.sender)
        result = await self.capabilities.request(self._asked(env, msg, scope, f"app:{scope}"))
        if msg.capability == MCP_NETWORK and result.status == "completed":
            self.mcp_net.grant(scope, msg.instance_id)  # its server may connect (`_mcp_net`)
        return result

    # ------------------------------------------------------------------ MCP server network

    @handles(sdk.McpNetOpenRequest)
    async def on_mcp_net_open(
        self, msg: sdk.McpNetOpenRequest, env: Envelope
    ) -> sdk.McpNetOpenReply:
        scope = app_scope_of(env.sender)
        if self._nursery is None:  # shutting down
            raise LineUpError(ErrorCode.PERMISSION_DENIED, "mcp.network")
        context: CapabilityContextReply = await self.bus.request(
            "focus",
            CapabilityContextRequest(instance_id=msg.instance_id, app_scope=scope),
            expect=CapabilityContextReply,
            timeout=FOCUS_TIMEOUT,
        )
        return await self.mcp_net.open(scope, msg, context.mcp_network, self._nursery)

    @handles(sdk.McpNetSendRequest)
    async def on_mcp_net_send(self, msg: sdk.McpNetSendRequest, env: Envelope) -> sdk.McpNetSent:
        return await self.mcp_net.send(app_scope_of(env.sender), msg)

    @handles(sdk.McpNetCloseRequest)
    async def on_mcp_net_close(self, msg: sdk.McpNetCloseRequest, env: Envelope) -> sdk.McpNetSent:
        return await self.mcp_net.close(app_scope_of(env.sender), msg)

    @handles(SurfaceCapabilityRequest)
    async def on_surface_capability(
        self, msg: SurfaceCapabilityRequest, env: Envelope
    ) -> sdk.CapabilityResult:
        # The owner of the instance is the app it is decided for: focus says which.
        return await self.capabilities.request(self._asked(env, msg, None, "surface"))

    @handles(SurfaceDownloadRequest)
    async def on_surface_download(
        self, msg: SurfaceDownloadRequest, env: Envelope
    ) -> sdk.CapabilityResult:
        """The file an MCP App offers: an artifact of its app first, then the user's own
        `artifact.save` of it (the prompt decides), as the app's request would be."""
        try:
            info = await self.create(
                msg.app_scope,
                sdk.ArtifactCreateRequest(
                    request_id=f"dl-{msg.request_id}"[:200],
                    instance_id=msg.instance_id,
                    name=msg.name,
                    media_type=msg.media_type,
                    content_b64=msg.content_b64,
                ),
            )
        except LineUpError as exc:
            if exc.code not in _TRANSIENT:
                self._refused(env, exc.code, msg.instance_id)
            raise
        asked = SurfaceCapabilityRequest(
            request_id=msg.request_id,
            instance_id=msg.instance_id,
            capability="artifact.save",
            purpose=DOWNLOAD_PURPOSE.format(name=info.name),
            input={"artifact_id": info.artifact_id},
        )
        return await self.capabilities.request(self._asked(env, asked, None, "surface"))

    @handles(PromptAnswerRequest)
    def on_prompt_answer(self, msg: PromptAnswerRequest, env: Envelope) -> UiAccepted:
        return self.capabilities.answer(msg)

    @handles(ProviderDoneRequest)
    def on_provider_done(self, msg: ProviderDoneRequest, env: Envelope) -> UiAccepted:
        return self.capabilities.provider_done(msg)

    @handles(CapabilityPendingRequest)
    def on_capability_pending(
        self, msg: CapabilityPendingRequest, env: Envelope
    ) -> CapabilityPendingReply:
        return self.capabilities.pending()

    @handles(GrantsListRequest)
    async def on_grants_list(self, msg: GrantsListRequest, env: Envelope) -> GrantsListReply:
        return await self.capabilities.grants.page()

    @handles(GrantSetRequest)
    async def on_grant_set(self, msg: GrantSetRequest, env: Envelope) -> GrantsListReply:
        page = await self.capabilities.grants.set(msg)
        if msg.capability == MCP_NETWORK and msg.policy != "allow":
            self.mcp_net.revoke(msg.app_scope)  # at once, its open connections too
        return page
