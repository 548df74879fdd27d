"""App delivery through real processes (issue 15): a signed bundle built by the test is
installed, called, updated, rolled back, disabled, enabled and removed, each step's inventory
revision seen at the Agent; a bundle tampered in one way is refused with its code and changes
nothing; a SIGKILL in the middle of an install or update leaves one whole version."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
import trio

from lineup.actors.kernel import ActorKind, ErrorCode, LineUpError
from lineup.actors.store._db import open_database
from lineup.actors.store.apps.registry import app_operation_put, app_remove
from lineup.actors.store.messages import AppOperationPutRequest, AppRemoveRequest
from lineup.sdk.bundle import SigningKey
from lineup.tests.support.agent_view import AgentView
from lineup.tests.support.bundles import (
    app_of,
    build_bundle,
    install,
    listing,
    manifest_in,
    operate,
    start_delivery,
    tree_digest,
    trust,
    with_entry,
    with_manifest,
)
from lineup.tests.support.runtime import CONVERSATION, agent_client
from lineup.tests.support.tree import attach

SCOPE = "deliver"
TOOL = f"{SCOPE}.echo"
INVENTORY = "lineup.v1.client.inventory"
KEY = SigningKey(b"\x05" * 32)
WAIT = 30.0


async def inventory_at(agent: AgentView, revision_above: int) -> dict[str, Any]:
    told = await agent.pull(INVENTORY, lambda m: int(m["payload"]["revision"]) > revision_above)
    payload: dict[str, Any] = told["payload"]
    return payload


def revision_of(inventory: dict[str, Any]) -> int:
    return int(inventory["payload"]["revision"])


def tools_of(payload: dict[str, Any]) -> set[str]:
    return {t["method"] for t in payload["tools"]}


async def call(agent: AgentView, revision: int, call_id: str, **input: Any) -> None:
    await agent.client.call_tool(
        CONVERSATION, TOOL, {"text": call_id, **input}, revision, call_id=call_id
    )


async def test_install_call_update_rollback_disable_enable_remove_each_tell_the_agent(  # noqa: PLR0915
    nursery: trio.Nursery, data_dir: Path, tmp_path: Path
) -> None:
    trust(data_dir, KEY.public)
    v1 = build_bundle(tmp_path / "src", KEY, version="1.0")
    v2 = build_bundle(tmp_path / "src", KEY, version="2.0", shout=True, title="Deliver Two")
    runtime = await start_delivery(nursery, data_dir)
    agent = AgentView(await agent_client(nursery, runtime.appserver_url), wait_s=WAIT)
    cli = await attach(nursery, runtime.supervisor, ActorKind.GATEWAY, "probe-gw")
    first = int(await agent.inventory())

    done = await install(cli, "op-install", v1)
    assert (done.state, done.kind, done.version) == ("completed", "install", "1.0")
    told = await inventory_at(agent, first)
    assert TOOL in tools_of(told)
    rev1 = int(told["revision"])

    await call(agent, rev1, "c-1")
    result = await agent.terminal("c-1")
    assert result["type"] == "lineup.v1.tool.result"
    assert result["payload"]["result"]["version"] == "1.0"
    cache = data_dir / "bundles" / SCOPE
    assert (cache / "1.0" / "bundle.lineup").read_bytes() == v1

    # Update: the instance running 1.0 is closed, the next call runs 2.0.
    done = await install(cli, "op-update", v2)
    assert (done.state, done.kind, done.from_version) == ("completed", "update", "1.0")
    assert (await install(cli, "op-down", v1)).code == ErrorCode.APP_VERSION_MISMATCH.value
    told = await inventory_at(agent, rev1)  # 2.0 has one tool more
    assert {TOOL, f"{SCOPE}.shout"} <= tools_of(told)
    rev2 = int(told["revision"])
    await call(agent, rev2, "c-2")
    assert (await agent.terminal("c-2"))["payload"]["result"]["version"] == "2.0"
    app = app_of(await listing(cli), SCOPE)
    assert (app.version, app.predecessor, app.source, app.state, app.title) == (
        "2.0",
        "1.0",
        "installed",
        "active",
        "Deliver Two",  # its manifest's title
    )

    done = await operate(cli, "op-rollback", "rollback", SCOPE)
    assert (done.state, done.kind) == ("completed", "rollback")
    told = await inventory_at(agent, rev2)
    assert TOOL in tools_of(told) and f"{SCOPE}.shout" not in tools_of(told)
    rev3 = int(told["revision"])
    await call(agent, rev3, "c-3")
    assert (await agent.terminal("c-3"))["payload"]["result"]["version"] == "1.0"
    app = app_of(await listing(cli), SCOPE)
    assert (app.version, app.title) == ("1.0", SCOPE)  # 1.0 has no title: its scope

    # Disable while a call runs: the tools leave, the instance winds down, the call ends.
    await call(agent, rev3, "c-hang", hang=True)
    await agent.pull(
        "lineup.v1.tool.receipt",
        lambda m: (
            m["payload"]["call_id"] == "c-hang" and m["payload"]["status"] == "activation_ready"
        ),
    )
    done = await operate(cli, "op-disable", "disable", SCOPE)
    assert done.state == "completed"
    off = await inventory_at(agent, rev3)
    assert TOOL not in tools_of(off)
    ended = await agent.terminal("c-hang")
    assert (ended["type"], ended["payload"]["code"]) == ("lineup.v1.tool.error", "app_closed")
    with trio.fail_after(WAIT):
        await runtime.supervisor.wait_until(
            lambda: not runtime.supervisor.children[f"miniapp:{SCOPE}"].is_up()
        )

    done = await operate(cli, "op-enable", "enable", SCOPE)
    assert done.state == "completed"
    on = await inventory_at(agent, int(off["revision"]))
    assert TOOL in tools_of(on)

    # Remove: its bundle, its private data dir and its row are gone, and so are its tools.
    home = data_dir / "apps" / SCOPE
    assert home.is_dir()  # its process ran, in its own data dir
    done = await operate(cli, "op-remove", "remove", SCOPE)
    assert done.state == "completed"
    gone = await inventory_at(agent, int(on["revision"]))
    assert TOOL not in tools_of(gone)
    assert not cache.exists() and not home.exists()
    assert app_of(await listing(cli), SCOPE) is None
    revisions = [int(m["payload"]["revision"]) for m in agent.seen if m["type"] == INVENTORY]
    assert revisions == sorted(set(revisions))
    # Each operation is recorded with its outcome, the newest first.
    ops = {op.operation_id: op.state for op in (await listing(cli)).operations}
    assert ops["op-remove"] == ops["op-install"] == "completed"
    assert ops["op-down"] == "failed"


def flip_byte(data: bytes) -> bytes:
    at = len(data) - 100
    return data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1 :]


@pytest.mark.parametrize(
    "tamper",
    [
        "flipped_byte",
        "size_plus_one",
        "untrusted_key",
        "host_too_old",
        "revoked",
        "long_path_part",
        "long_path",
        "runtime_scope",
        "registry_power",
    ],
)
async def test_a_tampered_bundle_is_refused_and_changes_nothing(
    nursery: trio.Nursery, data_dir: Path, tmp_path: Path, tamper: str
) -> None:
    trust(data_dir, KEY.public)
    v1 = build_bundle(tmp_path / "src", KEY, version="1.0")
    runtime = await start_delivery(nursery, data_dir)
    cli = await attach(nursery, runtime.supervisor, ActorKind.GATEWAY, "probe-gw")
    assert (await install(cli, "op-v1", v1)).state == "completed"
    before = tree_digest(data_dir / "bundles")
    expected = {
        "flipped_byte": ErrorCode.DIGEST_MISMATCH,
        "size_plus_one": ErrorCode.SIZE_MISMATCH,
        "untrusted_key": ErrorCode.UNKNOWN_KEY,
        "host_too_old": ErrorCode.HOST_VERSION_UNSUPPORTED,
        "revoked": ErrorCode.REVOKED,
        # Names the filesystem refuses: unpacking them failed half-way, leaving a `.tmp-*`
        # folder and the operation `running` for good (issue 27).
        "long_path_part": ErrorCode.BUNDLE_MALFORMED,
        "long_path": ErrorCode.BUNDLE_MALFORMED,
        # The runtime's own names and powers, however signed (issue 27): a fake
        # `interaction.confirm` beside the real one, and the App Registry's `app.manage`.
        "runtime_scope": ErrorCode.APP_PROTECTED,
        "registry_power": ErrorCode.APP_PROTECTED,
    }[tamper]
    if tamper == "flipped_byte":
        bad = flip_byte(build_bundle(tmp_path / "src", KEY, version="2.0"))
    elif tamper == "size_plus_one":
        bad = build_bundle(tmp_path / "src", KEY, version="2.0") + b"\0"
    elif tamper == "untrusted_key":
        bad = build_bundle(tmp_path / "other", SigningKey(b"\x09" * 32), version="2.0")
    elif tamper == "host_too_old":
        bad = build_bundle(tmp_path / "src", KEY, version="2.0", min_host_version="99.0")
    elif tamper == "long_path_part":
        good = build_bundle(tmp_path / "src", KEY, version="2.0")
        bad = with_entry(good, KEY, f"app/deliverapp/{'a' * 300}.py", b"")
    elif tamper == "long_path":
        good = build_bundle(tmp_path / "src", KEY, version="2.0")
        bad = with_entry(good, KEY, "app/deliverapp/" + "/".join(["d" * 100] * 44) + "/x.py", b"")
    elif tamper == "runtime_scope":
        good = build_bundle(tmp_path / "src", KEY, version="2.0")
        manifest = manifest_in(good)
        tools = [
            {**manifest["tools"][0], "method": f"interaction.{name}"}
            for name in ("confirm", "secure_input")
        ]
        bad = with_manifest(good, KEY, {**manifest, "app_scope": "interaction", "tools": tools})
    elif tamper == "registry_power":
        good = build_bundle(tmp_path / "src", KEY, version="2.0")
        manifest = manifest_in(good)
        asks = [*manifest.get("requested_capabilities", []), "app.manage"]
        bad = with_manifest(good, KEY, {**manifest, "requested_capabilities": asks})
    else:
        bad = build_bundle(tmp_path / "src", KEY, version="2.0")
        assert (
            await operate(cli, "op-revoke", "revoke", SCOPE, version="2.0")
        ).state == "completed"
    done = await install(cli, "op-bad", bad)
    assert (done.state, done.code) == ("failed", expected.value)
    assert tree_digest(data_dir / "bundles") == before
    app = app_of(await listing(cli), SCOPE)
    assert (app.version, app.state) == ("1.0", "active")
    # The app was installed but never called: no process of it ever started.
    assert f"miniapp:{SCOPE}" not in runtime.supervisor.children


async def test_an_app_with_a_broken_cache_is_unavailable_after_a_restart(
    nursery: trio.Nursery, data_dir: Path, tmp_path: Path
) -> None:
    trust(data_dir, KEY.public)
    v1 = build_bundle(tmp_path / "src", KEY, version="1.0")
    async with trio.open_nursery() as first_run:
        runtime = await start_delivery(first_run, data_dir)
        cli = await attach(first_run, runtime.supervisor, ActorKind.GATEWAY, "probe-gw")
        assert (await install(cli, "op-v1", v1)).state == "completed"
        first_run.cancel_scope.cancel()
    source = data_dir / "bundles" / SCOPE / "1.0" / "app" / "deliverapp" / "__init__.py"
    source.write_text(source.read_text() + "\n# changed\n")

    runtime = await start_delivery(nursery, data_dir)
    agent = AgentView(await agent_client(nursery, runtime.appserver_url), wait_s=WAIT)
    cli = await attach(nursery, runtime.supervisor, ActorKind.GATEWAY, "probe-gw")
    app = app_of(await listing(cli), SCOPE)
    assert app.state == "unavailable"
    # The Agent's history holds the first run's inventories too, the install's with the tool:
    # this run's is the revision after it, whenever it comes.
    installed = await agent.pull(INVENTORY, lambda m: TOOL in tools_of(m["payload"]))
    told = await agent.pull(INVENTORY, lambda m: revision_of(m) > revision_of(installed))
    assert TOOL not in tools_of(told["payload"])
    revision = revision_of(told)
    await call(agent, revision, "c-broken")
    error = await agent.terminal("c-broken")
    assert error["payload"]["code"] == ErrorCode.TOOL_NOT_VISIBLE.value
    assert (
        await operate(cli, "op-enable", "enable", SCOPE)
    ).code == ErrorCode.APP_UNAVAILABLE.value
    assert f"miniapp:{SCOPE}" not in runtime.supervisor.children


async def test_a_remove_cut_short_after_its_row_leaves_no_file_once_restarted(
    nursery: trio.Nursery, data_dir: Path, tmp_path: Path
) -> None:
    """A remove commits its row (with its operation's end) before it clears the bundle and the
    app's data dir, so a crash between leaves both folders and no row: the next start removes
    them. The crash is made here by committing exactly the remove's transaction, with the store's
    own function, on the stopped runtime's database."""
    trust(data_dir, KEY.public)
    async with trio.open_nursery() as first_run:
        runtime = await start_delivery(first_run, data_dir)
        cli = await attach(first_run, runtime.supervisor, ActorKind.GATEWAY, "probe-gw")
        v1 = build_bundle(tmp_path / "src", KEY, version="1.0")
        assert (await install(cli, "op-v1", v1)).state == "completed"
        first_run.cancel_scope.cancel()
    home = data_dir / "apps" / SCOPE
    home.mkdir(parents=True, exist_ok=True)
    (home / "notes.txt").write_text("the app's own data")
    database = open_database(data_dir, {})
    with database.conn:
        app_operation_put(
            database.conn,
            AppOperationPutRequest(
                operation_id="op-remove", app_scope=SCOPE, kind="remove", state="running"
            ),
            time.time(),
        )
        removal = AppRemoveRequest(app_scope=SCOPE, operation_id="op-remove")
        app_remove(database.conn, removal, time.time())
    database.close()
    assert (data_dir / "bundles" / SCOPE / "1.0").is_dir()

    runtime = await start_delivery(nursery, data_dir)
    cli = await attach(nursery, runtime.supervisor, ActorKind.GATEWAY, "probe-gw")
    listed = await listing(cli)
    assert app_of(listed, SCOPE) is None
    assert {op.operation_id: op.state for op in listed.operations}["op-remove"] == "completed"
    assert not home.exists()
    assert not (data_dir / "bundles" / SCOPE).exists()


@pytest.mark.parametrize("crash_at", ["cache_renamed", "row_written"])
async def test_a_sigkill_in_the_middle_of_an_update_leaves_one_whole_version(
    nursery: trio.Nursery, data_dir: Path, tmp_path: Path, crash_at: str
) -> None:
    trust(data_dir, KEY.public)
    v1 = build_bundle(tmp_path / "src", KEY, version="1.0")
    v2 = build_bundle(tmp_path / "src", KEY, version="2.0")
    runtime = await start_delivery(nursery, data_dir, registry_crash_at=crash_at)
    cli = await attach(nursery, runtime.supervisor, ActorKind.GATEWAY, "probe-gw")
    focus = runtime.supervisor.children["focus"]
    # The first install crashes too (the crash point is the same): it is the install case.
    with pytest.raises(LineUpError):  # focus dies with the request in flight
        await install(cli, "op-v1", v1)
    with trio.fail_after(WAIT):
        await runtime.supervisor.wait_until(lambda: focus.incarnation > 1 and focus.is_up())
    listed = await listing(cli)
    ops = {op.operation_id: (op.state, op.code) for op in listed.operations}
    app = app_of(listed, SCOPE)
    if crash_at == "cache_renamed":
        assert app is None
        assert ops["op-v1"] == ("failed", ErrorCode.ACTOR_RESTARTED.value)
        assert not (data_dir / "bundles" / SCOPE).exists()  # the orphan was swept
    else:
        assert (app.version, app.state) == ("1.0", "active")
        assert ops["op-v1"] == ("completed", None)
    assert not [p for p in (data_dir / "bundles").iterdir() if p.name.startswith(".tmp-")]

    if crash_at == "row_written":
        incarnation = focus.incarnation
        with pytest.raises(LineUpError):
            await install(cli, "op-v2", v2)
        with trio.fail_after(WAIT):
            await runtime.supervisor.wait_until(
                lambda: focus.incarnation > incarnation and focus.is_up()
            )
        app = app_of(await listing(cli), SCOPE)
        assert (app.version, app.predecessor, app.state) == ("2.0", "1.0", "active")
        # Whole versions only: each directory is exactly its bundle.
        for version in ("1.0", "2.0"):
            assert (data_dir / "bundles" / SCOPE / version / "bundle.lineup").is_file()
        assert sorted(os.listdir(data_dir / "bundles" / SCOPE)) == ["1.0", "2.0"]
