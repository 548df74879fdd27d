"""Artifacts through the real runtime (seed 004 §6.3): a MiniApp creates and reads back its
own; another app's read is `artifact_not_found`; the gateway's checks and the app's quota reach
the app as codes; neither the name nor the content is in any audit row or log line; and a
gateway SIGKILLed while an app creates leaves no half artifact, the retries yielding the same
ones."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
import trio

from lineup.actors.gateway._artifacts import MAX_APP_ARTIFACT_BYTES, artifact_id_of
from lineup.actors.gateway.messages import (
    ArtifactsListReply,
    ArtifactsListRequest,
    UiArtifactReadRequest,
)
from lineup.sdk import MiniApp
from lineup.sdk import protocol as p
from lineup.sdk.manifest import manifest_json
from lineup.sdk.tools import manifest_of
from lineup.tests.support.artifact_app import ArtMaker, ArtPeer, many_content
from lineup.tests.support.interactions import POLL, WAIT, Scene, scene_on
from lineup.tests.support.process import wait_pid_gone
from lineup.tests.support.runtime import CONVERSATION, Runtime, start_runtime
from lineup.tests.support.tree import audit_rows

NAME = "confidential-board-name.txt"
CONTENT = "TOPSECRET-CONTENT-4711"


async def start(nursery: trio.Nursery, data_dir: Path, *apps: type[MiniApp]) -> Runtime:
    data_dir.mkdir(parents=True, exist_ok=True)
    configs = []
    for app in apps:
        built = manifest_of(app)  # from the class's `app_info`
        scope = built.app_scope
        manifest = data_dir / f"{scope}.json"
        manifest.write_text(manifest_json(built))
        configs.append(
            {
                "app_scope": scope,
                "manifest": str(manifest),
                "entry": f"{app.__module__}:{app.__qualname__}",
                "title": scope,
            }
        )
    return await start_runtime(
        nursery, data_dir / "rt", demo_agent=False, extra_apps=tuple(configs)
    )


async def run(s: Scene, tool: str, arguments: dict[str, Any], call_id: str) -> dict[str, Any]:
    await s.agent.client.call_tool(CONVERSATION, tool, arguments, s.revision, call_id=call_id)
    done = await s.agent.terminal(call_id)
    result: dict[str, Any] = done["payload"]["result"]
    return result


async def test_an_app_reads_its_own_artifacts_only_within_its_quota_and_nothing_leaks(
    nursery: trio.Nursery, data_dir: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    runtime = await start(nursery, data_dir, ArtMaker, ArtPeer)
    s = await scene_on(nursery, runtime)
    made = await run(
        s,
        "artmaker.run",
        {"mode": "create", "name": NAME, "text": CONTENT, "request_id": "r-1"},
        "c-create",
    )
    [artifact_id] = made["ids"]
    assert artifact_id == artifact_id_of("artmaker", "r-1")
    read = await run(
        s, "artmaker.run", {"mode": "read", "artifact_id": artifact_id, "text": CONTENT}, "c-read"
    )
    assert read["sha_ok"] is True
    theirs = await run(s, "artpeer.read", {"artifact_id": artifact_id}, "c-peer")
    assert theirs["codes"] == ["artifact_not_found"]
    bad = await run(s, "artmaker.run", {"mode": "create", "media_type": "text/html"}, "c-bad")
    assert bad["codes"] == ["artifact_invalid"]
    big = await run(s, "artmaker.run", {"mode": "big"}, "c-big")
    assert big["codes"] == ["artifact_too_large"]
    # The user's side (the hostbridge) sees the card and reads the content.
    cards = await s.ui.request("gateway", ArtifactsListRequest(), expect=ArtifactsListReply)
    assert [(a.artifact_id, a.name) for a in cards.artifacts] == [(artifact_id, NAME)]
    content = await s.ui.request(
        "gateway", UiArtifactReadRequest(artifact_id=artifact_id), expect=p.ArtifactContent
    )
    assert content.info.sha256 == hashlib.sha256(CONTENT.encode()).hexdigest()

    size = p.MAX_ARTIFACT_BYTES
    fits = (MAX_APP_ARTIFACT_BYTES - len(CONTENT)) // size
    fill = await run(s, "artmaker.run", {"mode": "fill", "count": fits + 5, "size": size}, "c-fill")
    assert (fill["count"], fill["codes"]) == (fits, ["quota_exceeded"])

    rows = await audit_rows(
        s.reader,
        lambda rows: (
            {"artifact_not_found", "artifact_invalid", "quota_exceeded"}
            <= {r.code for r in rows if r.event == "gateway.artifact_refused"}
        ),
    )
    assert any(r.event == "store.artifact.created" and r.subject_id == artifact_id for r in rows)
    logged = capfd.readouterr()
    logs = "".join(f.read_text(errors="replace") for f in (data_dir / "rt").rglob("*.log"))
    for text in (repr(rows), logged.out, logged.err, logs):
        assert "confidential-board" not in text
        assert CONTENT not in text


async def test_a_gateway_killed_mid_create_leaves_no_half_artifact_and_retries_are_the_same(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    runtime = await start(nursery, data_dir, ArtMaker)
    s = await scene_on(nursery, runtime)
    count, size = 24, 200_000
    arguments = {"mode": "many", "count": count, "size": size}
    await s.agent.client.call_tool(
        CONVERSATION, "artmaker.run", arguments, s.revision, call_id="c-many"
    )
    root = data_dir / "rt" / "artifacts"
    with trio.fail_after(WAIT):  # let a few land, then kill it while the others are made
        while True:
            landed = (
                [f for f in root.iterdir() if f.name.startswith("art_")] if root.is_dir() else []
            )
            if len(landed) >= 3:
                break
            await trio.sleep(POLL)
    child = runtime.supervisor.children["gateway"]
    pid, incarnation = child.pid, child.incarnation
    assert pid is not None
    runtime.supervisor.kill("gateway")
    await wait_pid_gone(pid)
    with trio.fail_after(WAIT):
        await runtime.supervisor.wait_until(
            lambda: child.incarnation > incarnation and child.state == "running"
        )
    done = (await s.agent.terminal("c-many"))["payload"]["result"]
    expected = [artifact_id_of("artmaker", f"many-{i}") for i in range(count)]
    assert done["ids"] == expected
    assert (done["count"], done["sha_ok"]) == (count, True)
    for i, artifact_id in enumerate(expected):
        assert (root / artifact_id).read_bytes() == many_content(i, size)
    assert not [f for f in root.iterdir() if not f.name.startswith("art_")]
    # Every create again, with the same request ids: the same artifacts, nothing new.
    again = await run(s, "artmaker.run", arguments, "c-again")
    assert (again["ids"], again["count"], again["sha_ok"]) == (expected, count, True)
    cards = await s.ui.request("gateway", ArtifactsListRequest(), expect=ArtifactsListReply)
    assert sorted(a.artifact_id for a in cards.artifacts) == sorted(expected)
