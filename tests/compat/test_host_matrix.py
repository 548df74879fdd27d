"""The host compatibility matrix of seed 000 §9.1, one test per row, each driven by a golden
fixture in `fixtures/` (what the host gets, and what it must do with it). Rows 4 (its mount
side), 5, 6 and 8 are claims about the runtime: they run it, with real processes.

Rows and where they are proven:

    1 an unknown `lineup.v1.*` type falls back safely   unknown_lineup_types.json
    2 old plain text is shown as Markdown only          legacy_plain_text.json
    3 an unsupported Surface version is not mounted     surface_versions.json
    4 only verified bytes are mounted                   verified_bundle.json (the bundle's
                                                        side); registry_rows.json "row4" (the
                                                        mount: an altered cache never runs, an
                                                        intact one is served from its path)
    5 a failed candidate keeps the active version       registry_rows.json "row5"
    6 a revoked active bundle rolls back                registry_rows.json "row6"
    7 a bridge message from another frame is dropped    bridge_foreign_frame.json (the runtime's
                                                        side; the browser's:
                                                        tests/browser/test_surface_render.py::
                                                        test_rejected_messages_are_dropped_
                                                        counted_answered_and_audited)
    8 a catalog change gives a new minimal inventory    catalog_change.json
"""

from __future__ import annotations

import base64
import copy
import json
import re
from pathlib import Path
from typing import Any, cast
from urllib.parse import quote, urlsplit

import httpx
import pytest
import trio

from lineup import __version__
from lineup.actors.focus._cache import BundleCache
from lineup.actors.focus._surfaces import surface_entrypoint
from lineup.actors.focus.messages import SurfaceAssetsReply, SurfaceAssetsRequest
from lineup.actors.gateway.messages import GrantSetRequest, GrantsListReply
from lineup.actors.kernel import (
    ActorContext,
    ActorKind,
    AuditRecord,
    Bus,
    ErrorCode,
    Identity,
    LineUpError,
)
from lineup.actors.router._envelope import EnvelopeRejected
from lineup.actors.router._envelope import admit_document as admit
from lineup.hostbridge import _actor as hostbridge_actor
from lineup.hostbridge._markdown import ALLOWED_HREF_SCHEMES, NODE_TYPES, markdown_tree
from lineup.hostbridge.shell_protocol import SHELL_TO_RUNTIME, SurfaceRejectedFrame
from lineup.sdk.bundle import BundleRefused, SigningKey, read_header, verify_bundle
from lineup.sdk.manifest import SURFACE_VERSIONS, Entrypoint, Host, Manifest
from lineup.tests.support.agent_view import AgentView
from lineup.tests.support.bundles import (
    SURFACE_DOCUMENT,
    app_of,
    build_bundle,
    install,
    listing,
    operate,
    start_delivery,
    tree_digest,
    trust,
)
from lineup.tests.support.capability_user import start_with_user
from lineup.tests.support.runtime import CONVERSATION as AGENT_CONVERSATION
from lineup.tests.support.runtime import agent_client
from lineup.tests.support.tree import attach, audit_rows

FIXTURES = Path(__file__).parent / "fixtures"
BRIDGE_JS = Path(hostbridge_actor.__file__).parent / "web" / "js" / "core" / "bridge.js"
CONVERSATION = "conv-1"
AGENT = "agent-1"


def fixture(name: str) -> dict[str, Any]:
    return cast(dict[str, Any], json.loads((FIXTURES / name).read_text(encoding="utf-8")))


def nodes(tree: list[dict[str, Any]]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    stack = list(tree)
    while stack:
        node = stack.pop()
        found.append(node)
        stack.extend(node.get("c", ()))
    return found


# ---------------------------------------------------------------------- row 1


UNKNOWN = fixture("unknown_lineup_types.json")


@pytest.mark.parametrize("case", UNKNOWN["cases"], ids=[c["name"] for c in UNKNOWN["cases"]])
def test_row1_an_unknown_lineup_v1_type_is_refused_with_a_stable_code_and_never_run(
    case: dict[str, Any],
) -> None:
    raw = {**copy.deepcopy(UNKNOWN["base"]), **case["change"]}
    with pytest.raises(EnvelopeRejected) as rejected:
        admit(raw, conversation_id=CONVERSATION, agent_id=AGENT)
    assert rejected.value.code.value == case["code"]
    assert rejected.value.message_id == raw["id"]  # the refusal names it: it is not lost
    # The unchanged base is admitted: the refusal is the change's, not the fixture's.
    admit(copy.deepcopy(UNKNOWN["base"]), conversation_id=CONVERSATION, agent_id=AGENT)


# ---------------------------------------------------------------------- row 2


def test_row2_old_plain_text_is_chats_and_shown_as_markdown_only() -> None:
    legacy = fixture("legacy_plain_text.json")
    envelope = admit(legacy["envelope"], conversation_id=CONVERSATION, agent_id=AGENT)
    assert (envelope.type, envelope.scope.app_scope) == ("lineup.v1.text", legacy["scope"])
    assert envelope.payload == legacy["envelope"]["payload"]  # the text, and nothing more
    tree = markdown_tree(envelope.payload["markdown"])
    assert tree == legacy["tree"]
    for node in nodes(tree):
        assert node["t"] in NODE_TYPES
        assert set(node) <= {"t", "c", "v", "href", "lang", "start", "align"}
        if node["t"] == "a":
            assert node["href"].startswith(ALLOWED_HREF_SCHEMES)
    texts = [node["v"] for node in nodes(tree) if node["t"] in ("text", "pre")]
    assert "<script>alert(1)</script>" in texts  # markup stays text
    assert not any("javascript:" in n.get("href", "") for n in nodes(tree))


# ---------------------------------------------------------------------- row 3


SURFACES = fixture("surface_versions.json")


@pytest.mark.parametrize("case", SURFACES["cases"], ids=[c["name"] for c in SURFACES["cases"]])
def test_row3_a_surface_version_this_host_does_not_run_is_not_mounted(
    case: dict[str, Any],
) -> None:
    manifest = Manifest(
        format="lineup.app.v1",
        app_scope="surf",
        version="1",
        kind="installed",
        entrypoints=tuple(Entrypoint.model_validate(e) for e in case["entrypoints"]),
        host=Host(min_version="0.1.0"),
    )
    if case["mounted"] is None:
        with pytest.raises(LineUpError) as refused:
            surface_entrypoint(manifest, case["open"])
        assert refused.value.code is ErrorCode.SURFACE_UNAVAILABLE
    else:
        assert surface_entrypoint(manifest, case["open"]).id == case["mounted"]


def test_row3_the_shell_runs_the_same_surface_versions_as_the_runtime() -> None:
    # The Shell's own check (bridge.js) refuses to mount what the runtime would not open.
    found = re.search(r"export const SURFACE_VERSIONS = \[([0-9, ]*)\]", BRIDGE_JS.read_text())
    assert found is not None
    assert {int(v) for v in found.group(1).split(",") if v.strip()} == set(SURFACE_VERSIONS)


# ---------------------------------------------------------------------- row 4


def test_row4_only_the_verified_bytes_of_a_bundle_come_out_and_any_change_is_refused() -> None:
    golden = fixture("verified_bundle.json")
    data = base64.b64decode(golden["bundle"])
    trusted = {golden["key_id"]: base64.b64decode(golden["public_key"])}
    verified = verify_bundle(data, trusted=trusted, host_version=__version__)
    assert (verified.signed.app_scope, verified.signed.version, verified.package) == (
        golden["app_scope"],
        golden["version"],
        golden["package"],
    )
    assert {k: v.decode() for k, v in verified.files.items()} == golden["files"]
    header = verified.signed.model_dump()
    assert not any(
        marker in json.dumps(header).lower() for marker in ("://", "<", "html", ".js")
    )  # no URL, HTML or JS in what is signed: the bytes are the payload's, verified
    for at in (len(data) // 3, len(data) // 2, len(data) - 1):  # header, payload, the end
        tampered = data[:at] + bytes([data[at] ^ 0x20]) + data[at + 1 :]
        with pytest.raises(BundleRefused):
            verify_bundle(tampered, trusted=trusted, host_version=__version__)
    with pytest.raises(BundleRefused) as unknown:
        verify_bundle(data, trusted={}, host_version=__version__)
    assert unknown.value.code is ErrorCode.UNKNOWN_KEY


# ---------------------------------------------------------------------- row 7


class _AuditBus:
    def __init__(self) -> None:
        self.audits: list[AuditRecord] = []

    def audit_refusal(self, record: AuditRecord) -> bool:
        self.audits.append(record)
        return True


BRIDGE = fixture("bridge_foreign_frame.json")


@pytest.mark.parametrize(
    "report",
    BRIDGE["shell_reports"],
    ids=[r["audit"]["subject_id"] for r in BRIDGE["shell_reports"]],
)
def test_row7_a_bridge_message_from_another_frame_is_dropped_and_counted(
    report: dict[str, Any],
) -> None:
    # The Shell's rule (bridge.js): a message is taken only from a mounted Surface's own
    # window, never on its origin string, and a foreign one is never answered.
    source = BRIDGE_JS.read_text()
    listener = source[source.index("function onMessage(event)") :]
    listener = listener[: listener.index("\n}\n")]
    assert "bridge.iframe.contentWindow === source" in listener
    assert "bridge.reject(CODES.source, undefined)" in listener
    assert ".origin" not in source
    assert "if (code !== CODES.source && isRpcId(id)) fail(" in source
    # What the Shell reports of it is counted by the runtime, by code (the rejection counter).
    frame = SHELL_TO_RUNTIME.validate_json(json.dumps(report["frame"]))
    assert isinstance(frame, SurfaceRejectedFrame)
    bus = _AuditBus()
    ctx = ActorContext(
        Identity(ActorKind.HOSTBRIDGE, "hostbridge"), 1, Path("/nonexistent"), {}, cast(Bus, bus)
    )
    hostbridge_actor.HostbridgeActor(ctx)._surface_report(frame)
    [audit] = bus.audits
    assert (audit.event, audit.code, audit.subject_id) == (
        report["audit"]["event"],
        report["audit"]["code"],
        report["audit"]["subject_id"],
    )


# ---------------------------------------------------------------------- rows 4, 5, 6: the runtime


REGISTRY = fixture("registry_rows.json")
KEY = SigningKey(b"\x05" * 32)
WAIT = 30.0
INVENTORY = "lineup.v1.client.inventory"


def tools_of(payload: dict[str, Any]) -> dict[str, str]:
    """The inventory's tools, each as its canonical JSON (to compare them byte for byte)."""
    return {t["method"]: json.dumps(t, sort_keys=True) for t in payload["tools"]}


async def inventory_after(agent: AgentView, revision: int) -> dict[str, Any]:
    told = await agent.pull(INVENTORY, lambda m: int(m["payload"]["revision"]) > revision)
    payload: dict[str, Any] = told["payload"]
    return payload


async def call_tool(agent: AgentView, revision: int, tool: str, call_id: str) -> dict[str, Any]:
    await agent.client.call_tool(
        AGENT_CONVERSATION, tool, {"text": call_id}, revision, call_id=call_id
    )
    return await agent.terminal(call_id)


async def surface_get(shell_url: str, instance_id: str, path: str) -> httpx.Response:
    port = urlsplit(shell_url).port
    url = f"http://127.0.0.1:{port}/surfaces/{quote(instance_id, safe='')}/{path}"
    async with httpx.AsyncClient(timeout=WAIT) as client:
        return await client.get(url)


async def test_row4_only_the_verified_cache_is_mounted_and_an_altered_one_never_runs(
    nursery: trio.Nursery, data_dir: Path, tmp_path: Path
) -> None:
    golden = REGISTRY["row4"]
    trust(data_dir, KEY.public)
    intact = build_bundle(tmp_path / "src", KEY, scope="board", surface=True)
    altered = build_bundle(tmp_path / "src", KEY, scope="deliver", surface=True)
    runtime = await start_delivery(nursery, data_dir)
    agent = AgentView(await agent_client(nursery, runtime.appserver_url), wait_s=WAIT)
    cli = await attach(nursery, runtime.supervisor, ActorKind.GATEWAY, "probe-gw")
    first = int(await agent.inventory())
    assert (await install(cli, "op-board", intact)).state == "completed"
    assert (await install(cli, "op-deliver", altered)).state == "completed"
    cache = BundleCache(data_dir)
    # Altered on disk after the install (and before anything of it ran).
    changed = cache.version_dir("deliver", "1.0") / golden["altered"]
    changed.write_text("<!doctype html><p>not what was signed</p>\n")
    told = await agent.pull(
        INVENTORY,
        lambda m: (
            int(m["payload"]["revision"]) > first and "deliver.open" in tools_of(m["payload"])
        ),
    )
    revision = int(told["payload"]["revision"])

    # The intact app: its Surface is served, and only from its verified cache.
    opened = await call_tool(agent, revision, "board.open", "c-board")
    assert opened["type"] == "lineup.v1.tool.result", opened
    instance = opened["payload"]["result"]["text"].removeprefix("lu:surface:")
    bridge = await attach(nursery, runtime.supervisor, ActorKind.HOSTBRIDGE, "probe-hb")
    assets = await bridge.request(
        "focus", SurfaceAssetsRequest(instance_id=instance), expect=SurfaceAssetsReply
    )
    verified = cache.version_dir("board", "1.0") / golden["served"]
    assert Path(assets.web_root) / assets.document == verified
    served = await surface_get(runtime.shell_url, instance, "index.html")
    assert (served.status_code, served.content) == (200, verified.read_bytes())
    assert served.content == SURFACE_DOCUMENT.format(version="1.0").encode()

    # The altered app: refused at its launch, unavailable, never started, nothing served.
    refused = await call_tool(agent, revision, "deliver.open", "c-deliver")
    assert refused["type"] == "lineup.v1.tool.error", refused
    app = app_of(await listing(cli), "deliver")
    assert app.state == golden["state"]
    assert "miniapp:deliver" not in runtime.supervisor.children
    gone = await inventory_after(agent, revision)
    assert "deliver.open" not in tools_of(gone) and "board.open" in tools_of(gone)
    for instance_id in ("deliver:c-deliver", "deliver"):
        assert (await surface_get(runtime.shell_url, instance_id, "index.html")).status_code == 404


def candidate(name: str, version: str, tmp_path: Path) -> bytes:
    folder = tmp_path / name
    if name == "flipped_byte":
        data = build_bundle(folder, KEY, version=version)
        at = len(data) - 100
        return data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1 :]
    if name == "size_plus_one":
        return build_bundle(folder, KEY, version=version) + b"\0"
    if name == "untrusted_key":
        return build_bundle(folder, SigningKey(b"\x09" * 32), version=version)
    if name == "host_too_old":
        return build_bundle(folder, KEY, version=version, min_host_version="99.0")
    assert name == "not_newer"
    return build_bundle(folder, KEY, version=version, shout=True)  # other bytes, same version


async def test_row5_a_failed_candidate_keeps_the_active_version_its_cache_and_its_instance(
    nursery: trio.Nursery, data_dir: Path, tmp_path: Path
) -> None:
    golden = REGISTRY["row5"]
    trust(data_dir, KEY.public)
    active = build_bundle(tmp_path / "src", KEY, version=golden["active"])
    runtime = await start_delivery(nursery, data_dir)
    agent = AgentView(await agent_client(nursery, runtime.appserver_url), wait_s=WAIT)
    cli = await attach(nursery, runtime.supervisor, ActorKind.GATEWAY, "probe-gw")
    first = int(await agent.inventory())
    assert (await install(cli, "op-active", active)).state == "completed"
    revision = int((await inventory_after(agent, first))["revision"])
    ran = await call_tool(agent, revision, "deliver.echo", "c-0")
    assert ran["payload"]["result"]["version"] == golden["active"]
    child = runtime.supervisor.children["miniapp:deliver"]
    pid, incarnation = child.pid, child.incarnation
    before = tree_digest(data_dir / "bundles")
    for n, case in enumerate(golden["candidates"], start=1):
        bad = candidate(case["name"], case["version"], tmp_path)
        done = await install(cli, f"op-{case['name']}", bad)
        assert (done.state, done.code) == ("failed", case["code"]), case
        assert tree_digest(data_dir / "bundles") == before, case
        app = app_of(await listing(cli), "deliver")
        assert (app.version, app.state, app.predecessor) == (golden["active"], "active", None)
        # The instance running the active version was never closed: the same process answers.
        again = await call_tool(agent, revision, "deliver.echo", f"c-{n}")
        assert again["payload"]["result"]["version"] == golden["active"], case
        assert (child.pid, child.incarnation) == (pid, incarnation), case
    assert await BundleCache(data_dir).verify(
        "deliver", golden["active"], read_header(active)[0].sha256
    )
    newest = [m for m in agent.seen if m["type"] == INVENTORY][-1]
    assert int(newest["payload"]["revision"]) == revision  # nothing was published


async def test_row6_a_revoked_active_bundle_rolls_back_and_without_a_predecessor_is_unavailable(
    nursery: trio.Nursery, data_dir: Path, tmp_path: Path
) -> None:
    golden = REGISTRY["row6"]
    trust(data_dir, KEY.public)
    runtime = await start_delivery(nursery, data_dir)
    agent = AgentView(await agent_client(nursery, runtime.appserver_url), wait_s=WAIT)
    cli = await attach(nursery, runtime.supervisor, ActorKind.GATEWAY, "probe-gw")
    reader = await attach(nursery, runtime.supervisor, ActorKind.ROUTER, "reader")
    revision = int(await agent.inventory())
    for version in golden["installed"]:
        # Each later version has one tool more: each install changes the inventory.
        shout = version != golden["installed"][0]
        data = build_bundle(tmp_path / "src", KEY, version=version, shout=shout)
        assert (await install(cli, f"op-{version}", data)).state == "completed"
        revision = int((await inventory_after(agent, revision))["revision"])
    ran = await call_tool(agent, revision, "deliver.echo", "c-newest")
    assert ran["payload"]["result"]["version"] == golden["installed"][-1]

    step = golden["revoke_active"]
    done = await operate(cli, "op-revoke-active", "revoke", "deliver", version=step["version"])
    assert (done.state, done.kind, done.version) == (step["operation"], "revoke", step["version"])
    listed = await listing(cli)
    app = app_of(listed, "deliver")
    # The revoked version it rolled back from is no predecessor: a rollback cannot go there.
    assert (app.version, app.state, app.predecessor) == (step["active"], "active", None)
    assert app.operation.operation_id == "op-revoke-active"
    rows = await audit_rows(
        reader,
        lambda rows: any(r.subject_id == "op-revoke-active" for r in rows),
        event_prefix="app.",
    )
    assert step["audit"] in {r.event for r in rows if r.subject_id == "op-revoke-active"}
    told = await inventory_after(agent, revision)  # the predecessor's tools again
    assert "deliver.echo" in tools_of(told) and "deliver.shout" not in tools_of(told)
    revision = int(told["revision"])
    rolled = await call_tool(agent, revision, "deliver.echo", "c-rolled")
    assert rolled["payload"]["result"]["version"] == step["active"]
    assert await BundleCache(data_dir).verify(
        "deliver",
        step["active"],
        read_header(build_bundle(tmp_path / "src", KEY, version=step["active"]))[0].sha256,
    )

    # Revoking the version rolled back to: its predecessor is revoked too, so none verifies.
    step = golden["revoke_last"]
    done = await operate(cli, "op-revoke-last", "revoke", "deliver", version=step["version"])
    assert (done.state, done.code) == (step["operation"], None)
    app = app_of(await listing(cli), "deliver")
    assert app.state == step["state"]
    rows = await audit_rows(
        reader, lambda rows: any(r.event == step["audit"] for r in rows), event_prefix="app."
    )
    assert (step["audit"], step["audit_code"]) in {(r.event, r.code) for r in rows}
    gone = await inventory_after(agent, revision)
    assert "deliver.echo" not in tools_of(gone)
    refused = await call_tool(agent, int(gone["revision"]), "deliver.echo", "c-revoked")
    assert refused["payload"]["code"] == step["call_code"]
    with trio.fail_after(WAIT):
        await runtime.supervisor.wait_until(
            lambda: not runtime.supervisor.children["miniapp:deliver"].is_up()
        )  # the instance of the revoked version was closed
    assert (await operate(cli, "op-rollback", "rollback", "deliver")).code == "no_predecessor"


# ---------------------------------------------------------------------- row 8


CATALOG = fixture("catalog_change.json")


def check_minimal(case: dict[str, Any], before: dict[str, str], now: dict[str, str]) -> None:
    """`now` is `before` without the tools the case takes away and with those it gives back,
    every other tool exactly as it was."""
    leaves, joins = set(case.get("leaves", ())), set(case.get("joins", ()))
    assert leaves <= set(before) and not joins & set(before), case["name"]
    assert set(now) == (set(before) - leaves) | joins, case["name"]
    assert all(now[t] == before[t] for t in set(now) & set(before)), case["name"]


async def test_row8_a_catalog_change_gives_a_new_inventory_that_differs_only_in_its_tools(
    data_dir: Path,
) -> None:
    grants = [c for c in CATALOG["cases"] if "grant" in c]
    hosts = [c for c in CATALOG["cases"] if "capabilities" in c]
    async with trio.open_nursery() as nursery:
        runtime, user = await start_with_user(nursery, data_dir, {})
        agent = AgentView(await agent_client(nursery, runtime.appserver_url), wait_s=WAIT)
        first = await agent.inventory()
        before = await inventory_after(agent, int(first) - 1)
        full = tools_of(before)
        for case in grants:  # the user's grant changes, through the gateway
            request = GrantSetRequest.model_validate(case["grant"])
            await user.bus.request("gateway", request, expect=GrantsListReply)
            now = await inventory_after(agent, int(before["revision"]))
            check_minimal(case, tools_of(before), tools_of(now))
            before = now
        assert tools_of(before) == full
        revision = int(before["revision"])
        nursery.cancel_scope.cancel()
    for case in hosts:  # the host's configuration changes: the runtime starts again with it
        async with trio.open_nursery() as nursery:
            runtime, _ = await start_with_user(nursery, data_dir, case["capabilities"])
            agent = AgentView(await agent_client(nursery, runtime.appserver_url), wait_s=WAIT)
            now = await inventory_after(agent, revision)
            check_minimal(case, full, tools_of(now))
            revision = int(now["revision"])
            nursery.cancel_scope.cancel()
