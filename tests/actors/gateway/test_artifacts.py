"""The gateway's artifacts (`actors/gateway/_actor.py`) in a real tree: the store and the
gateway are real processes; the test joins as focus (which instances are live), the hostbridge
(which hears of each new artifact) and two MiniApps. Content goes under the data dir before its
row; an app reads only its own; every refusal is audited by code, never with a name or bytes;
and a gateway killed mid-create leaves nothing half made, its retry yields the same artifact."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Awaitable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import trio

from lineup.actors.focus.messages import FindInstanceRequest, InstanceReply
from lineup.actors.gateway._artifacts import artifact_id_of
from lineup.actors.gateway.messages import (
    ArtifactsListReply,
    ArtifactsListRequest,
    UiArtifactReadRequest,
)
from lineup.actors.kernel import ActorKind, Bus, Envelope, ErrorCode, Identity, LineUpError, Message
from lineup.hostbridge.messages import ArtifactCreatedEvent
from lineup.sdk import protocol as sdk
from lineup.supervisor import ChildSpec, Supervisor
from lineup.tests.support.process import wait_pid_gone
from lineup.tests.support.tree import attach, audit_rows, start_tree

WAIT = 20.0
LIVE = {("alpha", "a-1"), ("alpha", "a-2"), ("beta", "b-1")}
QUOTA = {"max_app_bytes": 4096, "max_app_count": 4}
NAME = "very-private-plan.txt"
SECRET = b"the launch code is 0000"


@dataclass
class Scene:
    supervisor: Supervisor
    data_dir: Path
    alpha: Bus
    beta: Bus
    shell: Bus  # the hostbridge's side
    reader: Bus
    told: list[sdk.ArtifactInfo] = field(default_factory=list)
    hold: trio.Event | None = None  # while set, focus answers a find only once it fires
    finding: trio.Event = field(default_factory=trio.Event)
    more_told: trio.Event = field(default_factory=trio.Event)

    async def wait_told(self, count: int) -> None:
        with trio.fail_after(WAIT):
            while len(self.told) < count:
                self.more_told = trio.Event()
                await self.more_told.wait()

    async def create(
        self, app: Bus, request_id: str, data: bytes = SECRET, **fields: Any
    ) -> sdk.ArtifactInfo:
        values: dict[str, Any] = {
            "request_id": request_id, "instance_id": "a-1", "name": NAME,
            "media_type": "text/plain", "content_b64": base64.b64encode(data).decode(),
        }  # fmt: skip
        with trio.fail_after(WAIT):
            return await app.request(
                "gateway", sdk.ArtifactCreateRequest(**(values | fields)), expect=sdk.ArtifactInfo
            )

    async def read(self, app: Bus, artifact_id: str) -> tuple[sdk.ArtifactInfo, bytes]:
        with trio.fail_after(WAIT):
            got = await app.request(
                "gateway", sdk.ArtifactReadRequest(artifact_id=artifact_id),
                expect=sdk.ArtifactContent,
            )  # fmt: skip
        return got.info, base64.b64decode(got.content_b64)

    async def listed(self, app: Bus, **fields: Any) -> list[str]:
        with trio.fail_after(WAIT):
            reply = await app.request(
                "gateway", sdk.ArtifactListRequest(**fields), expect=sdk.ArtifactListReply
            )
        return [a.artifact_id for a in reply.artifacts]


async def refused(call: Awaitable[object]) -> ErrorCode:
    with pytest.raises(LineUpError) as caught:
        await call
    return caught.value.code


@pytest.fixture
async def scene(nursery: trio.Nursery, data_dir: Path) -> Scene:
    specs = [
        ChildSpec("store", ActorKind.STORE, "lineup.actors.store:StoreActor"),
        ChildSpec(
            "gateway",
            ActorKind.GATEWAY,
            "lineup.actors.gateway:GatewayActor",
            config={"artifacts": QUOTA},
        ),
    ]
    data_dir.mkdir(parents=True, exist_ok=True)
    supervisor = await start_tree(nursery, specs, data_dir)
    holder: list[Scene] = []

    async def find(msg: FindInstanceRequest) -> InstanceReply:
        scene = holder[0]
        scene.finding.set()
        if scene.hold is not None:
            await scene.hold.wait()
        if (msg.app_scope, msg.instance_id) not in LIVE:
            raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, "no")
        assert msg.instance_id is not None
        return InstanceReply(instance_id=msg.instance_id, app_scope=msg.app_scope, state="running")

    def as_focus(env: Envelope) -> Awaitable[Message | None] | None:
        assert isinstance(env.body, FindInstanceRequest)
        return find(env.body)

    def as_hostbridge(env: Envelope) -> None:
        assert isinstance(env.body, ArtifactCreatedEvent)
        holder[0].told.append(env.body.artifact)
        holder[0].more_told.set()

    await nursery.start(supervisor.attach, Identity(ActorKind.FOCUS, "focus"), as_focus)
    shell: Bus = await nursery.start(
        supervisor.attach, Identity(ActorKind.HOSTBRIDGE, "hostbridge"), as_hostbridge
    )
    scene = Scene(
        supervisor,
        data_dir,
        await attach(nursery, supervisor, ActorKind.MINIAPP, "miniapp:alpha"),
        await attach(nursery, supervisor, ActorKind.MINIAPP, "miniapp:beta"),
        shell,
        await attach(nursery, supervisor, ActorKind.ROUTER, "reader"),
    )
    holder.append(scene)
    return scene


def content_file(scene: Scene, artifact_id: str) -> Path:
    return scene.data_dir / "artifacts" / artifact_id


async def test_an_artifact_is_written_recorded_told_and_read_back_by_its_app(
    scene: Scene,
) -> None:
    info = await scene.create(scene.alpha, "r-1")
    assert info.artifact_id == artifact_id_of("alpha", "r-1")
    assert (info.app_scope, info.instance_id, info.name, info.media_type) == (
        "alpha", "a-1", NAME, "text/plain",
    )  # fmt: skip
    assert (info.size, info.sha256) == (len(SECRET), hashlib.sha256(SECRET).hexdigest())
    assert content_file(scene, info.artifact_id).read_bytes() == SECRET
    assert await scene.read(scene.alpha, info.artifact_id) == (info, SECRET)
    await scene.wait_told(1)
    assert scene.told == [info]

    second = await scene.create(scene.alpha, "r-2", b"two", instance_id="a-2")
    assert await scene.listed(scene.alpha) == [second.artifact_id, info.artifact_id]
    assert await scene.listed(scene.alpha, instance_id="a-1") == [info.artifact_id]
    assert await scene.listed(scene.beta) == []
    # The user (through the hostbridge) sees and reads every app's.
    with trio.fail_after(WAIT):
        cards = await scene.shell.request(
            "gateway", ArtifactsListRequest(), expect=ArtifactsListReply
        )
        content = await scene.shell.request(
            "gateway", UiArtifactReadRequest(artifact_id=info.artifact_id),
            expect=sdk.ArtifactContent,
        )  # fmt: skip
    assert [a.artifact_id for a in cards.artifacts] == [second.artifact_id, info.artifact_id]
    assert base64.b64decode(content.content_b64) == SECRET


async def test_a_retried_create_is_the_same_artifact_and_is_told_once(scene: Scene) -> None:
    first = await scene.create(scene.alpha, "r-1")
    again = await scene.create(scene.alpha, "r-1", b"something else")
    assert again == first
    assert content_file(scene, first.artifact_id).read_bytes() == SECRET
    # The same request id of another app is another artifact.
    other = await scene.create(scene.beta, "r-1", instance_id="b-1")
    assert other.artifact_id != first.artifact_id
    await scene.wait_told(2)  # events arrive in order: the repeat's would be between
    assert [a.artifact_id for a in scene.told] == [first.artifact_id, other.artifact_id]


async def test_refusals_have_their_codes_and_audit_rows_hold_no_name_or_content(
    scene: Scene,
) -> None:
    mine = await scene.create(scene.alpha, "r-1")
    big = b"x" * (sdk.MAX_ARTIFACT_BYTES + 1)
    cases = [
        (scene.read(scene.beta, mine.artifact_id), ErrorCode.ARTIFACT_NOT_FOUND),
        (scene.read(scene.alpha, "art_missing"), ErrorCode.ARTIFACT_NOT_FOUND),
        (scene.create(scene.alpha, "r-2", media_type="text/html"), ErrorCode.ARTIFACT_INVALID),
        (scene.create(scene.alpha, "r-3", name="../etc"), ErrorCode.ARTIFACT_INVALID),
        (scene.create(scene.alpha, "r-4", name="a\\b"), ErrorCode.ARTIFACT_INVALID),
        (scene.create(scene.alpha, "r-5", name="a\x00b"), ErrorCode.ARTIFACT_INVALID),
        (scene.create(scene.alpha, "r-6", name=".."), ErrorCode.ARTIFACT_INVALID),
        (scene.create(scene.alpha, "r-7", content_b64="not base64!"), ErrorCode.ARTIFACT_INVALID),
        (scene.create(scene.alpha, "r-8", big), ErrorCode.ARTIFACT_TOO_LARGE),
        (scene.create(scene.alpha, "r-9", instance_id="b-1"), ErrorCode.APP_INSTANCE_NOT_FOUND),
        (scene.create(scene.alpha, "r-10", instance_id="gone"), ErrorCode.APP_INSTANCE_NOT_FOUND),
    ]
    for call, code in cases:
        assert await refused(call) is code
    assert await scene.listed(scene.alpha) == [mine.artifact_id]
    assert sorted(p.name for p in (scene.data_dir / "artifacts").iterdir()) == [mine.artifact_id]

    def refusals(rows: tuple[Any, ...], peer: str) -> list[Any]:
        return [r for r in rows if r.event == "gateway.artifact_refused" and r.peer == peer]

    # Per offender, a window's first rows are written (the rest are counted in one row).
    rows = await audit_rows(
        scene.reader,
        lambda rows: (
            len(refusals(rows, "miniapp:alpha")) >= 8 and len(refusals(rows, "miniapp:beta")) == 1
        ),
        event_prefix="gateway.",
    )
    [beta] = refusals(rows, "miniapp:beta")
    assert (beta.code, beta.subject_id) == ("artifact_not_found", mine.artifact_id)
    assert beta.message_type == "gateway.sdk.artifact.read"
    assert {r.code for r in refusals(rows, "miniapp:alpha")} <= {c.value for _, c in cases}
    everything = await audit_rows(scene.reader, lambda rows: True)
    text = repr(everything)
    assert "very-private" not in text and "launch code" not in text
    assert base64.b64encode(SECRET).decode()[:16] not in text


async def test_the_quota_counts_an_apps_bytes_and_artifacts(scene: Scene) -> None:
    await scene.create(scene.alpha, "big", b"x" * 4000)
    assert await refused(scene.create(scene.alpha, "over", b"y" * 100)) is ErrorCode.QUOTA_EXCEEDED
    # Another app's quota is its own.
    for i in range(QUOTA["max_app_count"]):
        await scene.create(scene.beta, f"b{i}", b"b", instance_id="b-1")
    extra = scene.create(scene.beta, "b-extra", b"b", instance_id="b-1")
    assert await refused(extra) is ErrorCode.QUOTA_EXCEEDED
    assert len(await scene.listed(scene.beta)) == QUOTA["max_app_count"]
    assert len(list((scene.data_dir / "artifacts").iterdir())) == 1 + QUOTA["max_app_count"]


async def test_content_that_no_longer_matches_its_sha256_is_not_served(scene: Scene) -> None:
    info = await scene.create(scene.alpha, "r-1")
    content_file(scene, info.artifact_id).write_bytes(b"the launch code is 1111")
    assert await refused(scene.read(scene.alpha, info.artifact_id)) is ErrorCode.INTERNAL_ERROR
    rows = await audit_rows(
        scene.reader,
        lambda rows: any(r.event == "gateway.artifact_corrupt" for r in rows),
        event_prefix="gateway.",
    )
    corrupt = [r for r in rows if r.event == "gateway.artifact_corrupt"]
    assert [(r.subject_id, r.code) for r in corrupt] == [(info.artifact_id, "internal_error")]


async def test_a_gateway_killed_mid_create_leaves_nothing_half_made_and_the_retry_is_the_same(
    scene: Scene, nursery: trio.Nursery
) -> None:
    artifact_id = artifact_id_of("alpha", "r-kill")
    root = scene.data_dir / "artifacts"
    scene.hold = trio.Event()
    failed: list[ErrorCode] = []
    answered = trio.Event()

    async def creating() -> None:
        failed.append(await refused(scene.create(scene.alpha, "r-kill")))
        answered.set()

    nursery.start_soon(creating)
    with trio.fail_after(WAIT):
        await scene.finding.wait()  # the create is in flight, inside the gateway
    # What a crash after the write and before the row would leave: a file without a row (here
    # of other bytes), and a temporary file of a write cut short.
    content_file(scene, artifact_id).write_bytes(b"half")
    (root / f".{artifact_id}.tmp").write_bytes(b"ha")
    child = scene.supervisor.children["gateway"]
    pid, incarnation = child.pid, child.incarnation
    assert pid is not None
    scene.supervisor.kill("gateway")
    await wait_pid_gone(pid)
    with trio.fail_after(WAIT):
        await scene.supervisor.wait_until(
            lambda: child.incarnation > incarnation and child.state == "running"
        )
        await answered.wait()
    assert failed == [ErrorCode.ACTOR_RESTARTED]
    assert not (root / f".{artifact_id}.tmp").exists()  # swept at start
    assert await scene.listed(scene.alpha) == []  # no row for the orphan
    scene.hold.set()
    scene.hold = None
    info = await scene.create(scene.alpha, "r-kill")
    assert info.artifact_id == artifact_id
    assert await scene.read(scene.alpha, artifact_id) == (info, SECRET)
    assert await scene.listed(scene.alpha) == [artifact_id]
