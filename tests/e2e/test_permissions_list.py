"""The permissions page's list through the real runtime (issue 14): every installed app,
enabled or not, is listed with each capability its manifest declares before any app asked for
anything, and again after the gateway was SIGKILLed and restarted (it learns the apps from
focus's registry, not from the requests it happened to see); the user's grant survives it."""

from __future__ import annotations

from pathlib import Path

import trio

from lineup.actors.focus.messages import AppEnableRequest, InventoryReply
from lineup.actors.gateway.messages import GrantSetRequest, GrantsListReply, GrantsListRequest
from lineup.miniapps import catalogue
from lineup.sdk.manifest import load_manifest
from lineup.tests.support.capability_app import DECLARED
from lineup.tests.support.capability_user import User, start_with_user
from lineup.tests.support.runtime import kill_and_wait_restarted

WAIT = 20.0


def declared_by_every_app() -> dict[tuple[str, str], str]:
    """(app, capability) -> the app's title, from the manifests themselves."""
    expected: dict[tuple[str, str], str] = {}
    for entry in catalogue.registry_entries():
        if entry["app_scope"] == "chat":
            continue
        manifest = load_manifest(Path(entry["manifest"]).read_bytes())
        for capability in manifest.requested_capabilities:
            expected[entry["app_scope"], capability] = entry["title"]
    for scope in ("capapp", "capdeny", "capallow"):
        for capability in DECLARED:
            expected[scope, capability] = f"{scope} title"
    return expected


async def listed(user: User) -> GrantsListReply:
    with trio.fail_after(WAIT):
        reply: GrantsListReply = await user.bus.request(
            "gateway", GrantsListRequest(), expect=GrantsListReply, timeout=WAIT, retry=True
        )
    return reply


async def test_every_app_is_listed_with_its_declared_capabilities_also_after_a_gateway_restart(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    runtime, user = await start_with_user(nursery, data_dir, {})
    off = AppEnableRequest(app_scope="capdeny", enabled=False)  # a disabled app is listed too
    await user.bus.request("focus", off, expect=InventoryReply)
    expected = declared_by_every_app()
    assert ("whiteboard", "artifact.save") in expected  # the bundled apps are in the runtime
    assert ("app-registry", "app.install") in expected

    before = await listed(user)  # no app has asked for anything yet
    rows = {(g.app_scope, g.capability): g for g in before.grants}
    assert {k: g.app_title for k, g in rows.items()} == expected
    assert not any(g.granted for g in before.grants)
    assert rows["capdeny", "file.open"].policy == "ask"

    await user.bus.request(
        "gateway",
        GrantSetRequest(app_scope="whiteboard", capability="artifact.save", policy="deny"),
        expect=GrantsListReply,
    )
    await kill_and_wait_restarted(runtime, "gateway", wait=WAIT)

    after = await listed(user)
    rows = {(g.app_scope, g.capability): g for g in after.grants}
    assert {k: g.app_title for k, g in rows.items()} == expected
    blocked = rows["whiteboard", "artifact.save"]
    assert (blocked.policy, blocked.granted) == ("deny", True)
    assert [k for k, g in rows.items() if g.granted] == [("whiteboard", "artifact.save")]
