"""Two MiniApps that make and read artifacts (`sdk.artifacts`), for the e2e tests of the
gateway through the real tree: `artmaker` creates, reads back, fills its quota and keeps
creating through a gateway restart; `artpeer` tries to read `artmaker`'s."""

from __future__ import annotations

import hashlib
from typing import Final, Literal

import trio
from pydantic import BaseModel, ConfigDict, Field

from lineup.sdk import AppContext, AppInfo, ErrorCode, LineUpError, MiniApp, ToolCall, tool
from lineup.sdk import protocol as p

RETRIED: Final = frozenset(
    {ErrorCode.ACTOR_RESTARTED, ErrorCode.ACTOR_UNAVAILABLE, ErrorCode.DEADLINE_EXCEEDED}
)
MAX_RETRIES: Final = 400
RETRY_PAUSE: Final = 0.05  # app code retrying a restarting gateway, as any app would


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class MakeInput(_Model):
    mode: Literal["create", "read", "fill", "many", "big"]
    name: str = Field(default="a.txt", max_length=128)
    media_type: str = Field(default="text/plain", max_length=100)
    text: str = Field(default="", max_length=1000)
    request_id: str | None = Field(default=None, max_length=100)
    artifact_id: str | None = Field(default=None, max_length=200)
    count: int = Field(default=1, ge=1, le=200)
    size: int = Field(default=1, ge=1, le=p.MAX_ARTIFACT_BYTES)


class MakeOutput(_Model):
    ids: tuple[str, ...] = ()
    codes: tuple[str, ...] = ()
    sha_ok: bool | None = None
    count: int = 0


def many_content(i: int, size: int) -> bytes:
    """The content of `many`'s artifact `i`: distinct per artifact, the same on every run."""
    seed = hashlib.sha256(f"many-{i}".encode()).digest()
    return (seed * (size // len(seed) + 1))[:size]


class ArtMaker(MiniApp):
    app_info = AppInfo(app_scope="artmaker", version="1.0.0", kind="bundled-reference")

    async def start(self, app: AppContext) -> None:
        self.app = app

    async def _create(
        self, instance_id: str, media_type: str, data: bytes, name: str, request_id: str
    ) -> p.ArtifactInfo:
        for _ in range(MAX_RETRIES):
            try:
                return await self.app.artifacts.create(
                    instance_id, media_type, data, name, request_id=request_id
                )
            except LineUpError as exc:
                if exc.code not in RETRIED:
                    raise
            await trio.sleep(RETRY_PAUSE)
        raise LineUpError(ErrorCode.ACTOR_UNAVAILABLE, "the gateway did not come back")

    @tool("artmaker.run", handling="launch", input=MakeInput, output=MakeOutput, timeout_ms=120_000)
    async def run(self, call: ToolCall[MakeInput]) -> MakeOutput:
        x = call.input
        try:
            if x.mode == "create":
                info = await self.app.artifacts.create(
                    call.instance_id, x.media_type, x.text.encode(), x.name, request_id=x.request_id
                )
                return MakeOutput(ids=(info.artifact_id,))
            if x.mode == "read":
                assert x.artifact_id is not None
                info, data = await self.app.artifacts.read(x.artifact_id)
                ok = hashlib.sha256(data).hexdigest() == info.sha256 and data == x.text.encode()
                return MakeOutput(ids=(info.artifact_id,), sha_ok=ok)
            if x.mode == "big":
                data = b"b" * (p.MAX_ARTIFACT_BYTES + 1)
                await self.app.artifacts.create(call.instance_id, x.media_type, data, x.name)
                return MakeOutput()
            if x.mode == "fill":
                made = 0
                try:
                    for i in range(x.count):
                        await self.app.artifacts.create(
                            call.instance_id, "text/plain", b"f" * x.size, f"fill-{i}.txt",
                            request_id=f"fill-{i}",
                        )  # fmt: skip
                        made += 1
                except LineUpError as exc:
                    return MakeOutput(codes=(exc.code.value,), count=made)
                return MakeOutput(count=made)
            # many: through a gateway restart; then every artifact listed is checked whole.
            ids = []
            for i in range(x.count):
                info = await self._create(
                    call.instance_id, "text/plain", many_content(i, x.size), f"many-{i}.txt",
                    f"many-{i}",
                )  # fmt: skip
                ids.append(info.artifact_id)
            listed = await self.app.artifacts.list()
            ok = True
            for listed_info in listed:
                info, data = await self.app.artifacts.read(listed_info.artifact_id)
                ok = ok and hashlib.sha256(data).hexdigest() == info.sha256
            return MakeOutput(ids=tuple(ids), sha_ok=ok, count=len(listed))
        except LineUpError as exc:
            return MakeOutput(codes=(exc.code.value,))


class PeerInput(_Model):
    artifact_id: str = Field(max_length=200)


class ArtPeer(MiniApp):
    app_info = AppInfo(app_scope="artpeer", version="1.0.0", kind="bundled-reference")

    async def start(self, app: AppContext) -> None:
        self.app = app

    @tool("artpeer.read", handling="launch", input=PeerInput, output=MakeOutput, timeout_ms=30_000)
    async def read(self, call: ToolCall[PeerInput]) -> MakeOutput:
        try:
            await self.app.artifacts.read(call.input.artifact_id)
        except LineUpError as exc:
            return MakeOutput(codes=(exc.code.value,))
        return MakeOutput(codes=("ok",))
