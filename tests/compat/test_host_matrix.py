"""The host compatibility matrix of seed 000 §9.1, one test per row, each driven by a golden
fixture in `fixtures/` (what the host gets, and what it must do with it).

Rows and where they are proven:

    1 an unknown `lineup.v1.*` type falls back safely   unknown_lineup_types.json
    2 old plain text is shown as Markdown only          legacy_plain_text.json
    3 an unsupported Surface version is not mounted     surface_versions.json
    4 only verified bytes are mounted                   verified_bundle.json (the bundle's side;
                                                        the verified cache's mount: issue 15)
    7 a bridge message from another frame is dropped    bridge_foreign_frame.json (the runtime's
                                                        side; the browser's:
                                                        tests/browser/test_surface_render.py::
                                                        test_rejected_messages_are_dropped_
                                                        counted_answered_and_audited)

Rows 5 (a failed candidate keeps the active version), 6 (a revoked active bundle rolls back)
and 8 (a catalog change gives a new minimal inventory) need the registry and the inventory's
capability filter of issues 14–15 and are added with them.
"""

from __future__ import annotations

import base64
import copy
import json
import re
from pathlib import Path
from typing import Any, cast

import pytest

from lineup import __version__
from lineup.actors.focus._surfaces import surface_entrypoint
from lineup.actors.kernel import (
    ActorContext,
    ActorKind,
    AuditRecord,
    Bus,
    ErrorCode,
    Identity,
    LineUpError,
)
from lineup.actors.router._envelope import EnvelopeRejected, admit
from lineup.hostbridge import _actor as hostbridge_actor
from lineup.hostbridge._markdown import ALLOWED_HREF_SCHEMES, NODE_TYPES, markdown_tree
from lineup.hostbridge.shell_protocol import SHELL_TO_RUNTIME, SurfaceRejectedFrame
from lineup.sdk.bundle import BundleRefused, verify_bundle
from lineup.sdk.manifest import SURFACE_VERSIONS, Entrypoint, Host, Manifest

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
