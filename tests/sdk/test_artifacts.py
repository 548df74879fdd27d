"""`AppContext.artifacts` (sdk/_services.py) against the testkit's fake gateway (sdk/testkit/):
create, read back, list; idempotent by request id; another app's is not found; the gateway's
checks and the quota; content over the bound is refused before anything is sent."""

from __future__ import annotations

import hashlib

import pytest

from lineup.sdk import ErrorCode, LineUpError
from lineup.sdk import protocol as p
from lineup.sdk.testkit import DEFAULT_INSTANCE, FakeRuntime


async def test_an_artifact_is_created_read_back_and_listed() -> None:
    runtime = FakeRuntime("whiteboard")
    artifacts = runtime.context().artifacts
    info = await artifacts.create(DEFAULT_INSTANCE, "image/png", b"\x89PNG...", "board.png")
    assert (info.app_scope, info.instance_id, info.name, info.size) == (
        "whiteboard", DEFAULT_INSTANCE, "board.png", 7,
    )  # fmt: skip
    assert info.sha256 == hashlib.sha256(b"\x89PNG...").hexdigest()
    assert await artifacts.read(info.artifact_id) == (info, b"\x89PNG...")
    later = await artifacts.create(DEFAULT_INSTANCE, "application/json", b"{}", "board.json")
    assert await artifacts.list() == (later, info)
    assert await artifacts.list("other-instance") == ()


async def test_a_retry_is_the_same_artifact() -> None:
    artifacts = FakeRuntime().context().artifacts
    first = await artifacts.create(DEFAULT_INSTANCE, "text/plain", b"a", "a.txt", request_id="r")
    again = await artifacts.create(DEFAULT_INSTANCE, "text/plain", b"b", "b.txt", request_id="r")
    assert again == first
    # Without a request id, the same content is the same artifact, other content another.
    auto = await artifacts.create(DEFAULT_INSTANCE, "text/plain", b"a", "a.txt")
    assert auto == await artifacts.create(DEFAULT_INSTANCE, "text/plain", b"a", "a.txt")
    assert auto != await artifacts.create(DEFAULT_INSTANCE, "text/plain", b"c", "a.txt")
    assert len(await artifacts.list()) == 3


async def test_another_apps_artifact_is_not_found() -> None:
    runtime = FakeRuntime("mine")
    theirs = runtime.artifacts.put_foreign("theirs", b"secret")
    with pytest.raises(LineUpError) as caught:
        await runtime.context().artifacts.read(theirs)
    assert caught.value.code is ErrorCode.ARTIFACT_NOT_FOUND
    assert await runtime.context().artifacts.list() == ()


@pytest.mark.parametrize(
    ("media_type", "data", "name", "instance", "code"),
    [
        ("text/html", b"x", "x.html", DEFAULT_INSTANCE, ErrorCode.ARTIFACT_INVALID),
        ("text/plain", b"x", "../x", DEFAULT_INSTANCE, ErrorCode.ARTIFACT_INVALID),
        ("text/plain", b"x", "x\ny", DEFAULT_INSTANCE, ErrorCode.ARTIFACT_INVALID),
        ("text/plain", b"x", "..", DEFAULT_INSTANCE, ErrorCode.ARTIFACT_INVALID),
        (
            "text/plain",
            b"x" * (p.MAX_ARTIFACT_BYTES + 1),
            "x",
            DEFAULT_INSTANCE,
            ErrorCode.ARTIFACT_TOO_LARGE,
        ),
        ("text/plain", b"x", "x.txt", "not-mine", ErrorCode.APP_INSTANCE_NOT_FOUND),
    ],
)
async def test_the_gateways_checks_refuse_with_their_codes(
    media_type: str, data: bytes, name: str, instance: str, code: ErrorCode
) -> None:
    runtime = FakeRuntime()
    with pytest.raises(LineUpError) as caught:
        await runtime.context().artifacts.create(instance, media_type, data, name)
    assert caught.value.code is code
    assert runtime.artifacts.infos == {}


async def test_the_quota_is_the_apps_total() -> None:
    runtime = FakeRuntime()
    runtime.artifacts.max_app_count = 1
    artifacts = runtime.context().artifacts
    await artifacts.create(DEFAULT_INSTANCE, "text/plain", b"1", "1.txt")
    with pytest.raises(LineUpError) as caught:
        await artifacts.create(DEFAULT_INSTANCE, "text/plain", b"2", "2.txt")
    assert caught.value.code is ErrorCode.QUOTA_EXCEEDED


async def test_content_over_the_bound_is_refused_before_it_is_sent() -> None:
    runtime = FakeRuntime()
    runtime.refuse(p.ArtifactCreateRequest, ErrorCode.INTERNAL_ERROR)  # would show if sent
    with pytest.raises(LineUpError) as caught:
        await runtime.context().artifacts.create(
            DEFAULT_INSTANCE, "text/plain", b"x" * (p.MAX_ARTIFACT_BYTES + 1), "x"
        )
    assert caught.value.code is ErrorCode.ARTIFACT_TOO_LARGE
