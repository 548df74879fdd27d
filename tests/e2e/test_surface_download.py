"""An MCP App's `ui/download-file` at the real gateway (issue 30): the file becomes an artifact
of the Surface's app, which the user saves through `artifact.save` after the runtime's own
prompt (the runtime's purpose, not the app's); a no is the prompt's status; another app's
instance is refused; nothing of the file in the audit."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
import trio

from lineup.actors.gateway._actor import DOWNLOAD_PURPOSE
from lineup.actors.gateway.messages import (
    ArtifactsListReply,
    ArtifactsListRequest,
    SurfaceDownloadRequest,
)
from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.sdk.protocol import CapabilityResult
from lineup.tests.support.tree import audit_rows

from .test_capabilities import Scene, scene

CONTENT = b"DOWNLOAD-CONTENT-6620\n"


def offered(instance_id: str, request_id: str, scope: str = "capapp") -> SurfaceDownloadRequest:
    return SurfaceDownloadRequest(
        request_id=request_id,
        instance_id=instance_id,
        app_scope=scope,
        name="notes-5531.txt",
        media_type="text/plain",
        content_b64=base64.b64encode(CONTENT).decode(),
    )


async def download(
    s: Scene, nursery: trio.Nursery, request: SurfaceDownloadRequest, decision: str
) -> CapabilityResult:
    """The request, answered by the user at the prompt with `decision` (and the save run)."""
    user = s.user
    seen_prompts, seen_runs = len(user.prompts), len(user.runs)
    got: list[CapabilityResult] = []
    done = trio.Event()

    async def ask() -> None:
        got.append(await user.bus.request("gateway", request, expect=CapabilityResult))
        done.set()

    nursery.start_soon(ask)
    prompt = await user.prompt("artifact.save", seen_prompts)
    assert (prompt.app_scope, prompt.purpose) == (
        "capapp",
        DOWNLOAD_PURPOSE.format(name="notes-5531.txt"),
    )
    await user.answer(prompt.prompt_id, decision)
    if decision == "allow_once":
        run = await user.run("artifact.save", seen_runs)
        await user.done(run.run_id, "completed")
    with trio.fail_after(20):
        await done.wait()
    return got[0]


async def test_an_offered_file_is_an_artifact_of_the_app_the_user_saves_or_declines(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    s = await scene(nursery, data_dir, {"prompt_quiet_s": 0})
    # An instance of the app, in front (its tool launches it): what a Surface would be of.
    call = await s.ask("capapp", "no.such.capability", "warmup")
    instance_id, _ = await s.results(call)

    saved = await download(s, nursery, offered(instance_id, "s1-p-7:0"), "allow_once")
    assert (saved.capability, saved.status, saved.code) == ("artifact.save", "completed", None)
    listed = await s.user.bus.request("gateway", ArtifactsListRequest(), expect=ArtifactsListReply)
    mine = [a for a in listed.artifacts if a.name == "notes-5531.txt"]
    assert [(a.app_scope, a.instance_id, a.size) for a in mine] == [
        ("capapp", instance_id, len(CONTENT))
    ]

    declined = await download(s, nursery, offered(instance_id, "s1-p-8:0"), "deny")
    assert (declined.status, declined.code) == ("permission_denied", "permission_denied")

    pdf = offered(instance_id, "s1-p-10:0").model_copy(update={"media_type": "application/pdf"})
    with pytest.raises(LineUpError) as invalid:  # not a type an artifact may have: no prompt
        await s.user.bus.request("gateway", pdf, expect=CapabilityResult)
    assert invalid.value.code is ErrorCode.ARTIFACT_INVALID
    assert len(s.user.prompts) == 2  # the two before it: none for a file refused

    with pytest.raises(LineUpError) as refused:  # not the named app's instance
        await s.user.bus.request(
            "gateway", offered(instance_id, "s1-p-9:0", "capdeny"), expect=CapabilityResult
        )
    assert refused.value.code is ErrorCode.APP_INSTANCE_NOT_FOUND

    rows = await audit_rows(
        s.reader,
        lambda rows: {"app_instance_not_found", "artifact_invalid"} <= {r.code for r in rows},
        event_prefix="gateway.",
    )
    assert "DOWNLOAD-CONTENT" not in repr(rows) and "notes-5531" not in repr(rows)
