"""An MCP App's `resources/list|read`, `ui/update-model-context` and `ui/download-file` at the
hostbridge (issue 30): its own app's resources only, its context to the router, its files to
the gateway as artifacts the user saves; refusals by stable code, audited by code alone."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
import trio

from lineup.actors.focus.messages import (
    SurfaceAssetsReply,
    SurfaceAssetsRequest,
    SurfaceResource,
    SurfaceResourceReadReply,
    SurfaceResourceReadRequest,
)
from lineup.actors.gateway.messages import CapabilityResult, SurfaceDownloadRequest
from lineup.actors.kernel import ErrorCode, LineUpError, Message
from lineup.actors.router.messages import SurfaceContextReply, SurfaceContextRequest
from lineup.hostbridge._surface_mcp import (
    CONTEXT_BURST,
    MAX_MODEL_CONTEXT_BYTES,
    MAX_RESOURCE_BYTES,
    file_name,
)
from lineup.sdk.mcp_apps import MCP_APP_MIME_TYPE, McpAppCsp, McpAppUi, resource_uri, ui_meta

from .test_actor import next_frame, start_hostbridge
from .test_surfaces import INSTANCE, SCOPE, SURFACE, SurfaceBus, connect, greet, request

PAGE = "<!doctype html><html><body><p>clock</p><script>let t = 1;</script></body></html>"
NOTE = {"uri": "data://x/note", "mimeType": "text/plain", "text": "live"}
UI = ui_meta(McpAppUi(csp=McpAppCsp(connect_domains=("https://api.example.com",))))


class McpBus(SurfaceBus):
    """A focus whose app has two MCP App UI documents (one of them too large to hand), a
    router that takes context updates, a gateway whose user says `decision` to a save."""

    def __init__(self, web_root: Path) -> None:
        super().__init__(web_root, mcp_app=True)
        self.decision = "completed"  # the result's status
        self.code: str | None = None  # and its code
        self.context_error: ErrorCode | None = None

    async def request(self, peer: str, body: Message, **kwargs: Any) -> Message:
        if isinstance(body, SurfaceAssetsRequest):
            self.requests.append(body)
            return SurfaceAssetsReply(
                instance_id=body.instance_id,
                surface_id=SURFACE,
                web_root=str(self.web_root),
                document="index.html",
                mcp_app=True,
                resources=(
                    SurfaceResource(entrypoint="main", document="index.html", ui=UI),
                    SurfaceResource(entrypoint="big", document="big.html"),
                    SurfaceResource(entrypoint="gone", document="missing.html"),
                ),
            )
        if isinstance(body, SurfaceResourceReadRequest):  # an MCP app's server, through focus
            self.requests.append(body)
            if body.uri != NOTE["uri"]:
                raise LineUpError(ErrorCode.RESOURCE_NOT_FOUND, "the server has none")
            return SurfaceResourceReadReply(contents=(NOTE,))
        if isinstance(body, SurfaceContextRequest):
            self.requests.append(body)
            if self.context_error is not None:
                raise LineUpError(self.context_error, "router says no")
            return SurfaceContextReply(revision=1, changed=True)
        if isinstance(body, SurfaceDownloadRequest):
            self.requests.append(body)
            self.changed.set()
            return CapabilityResult(
                request_id=body.request_id,
                capability="artifact.save",
                status=self.decision,
                code=self.code,
            )
        return await super().request(peer, body, **kwargs)


def web(tmp_path: Path) -> Path:
    root = tmp_path / "web"
    root.mkdir()
    (root / "index.html").write_text(PAGE)
    (root / "big.html").write_bytes(b"<p>" + b"x" * MAX_RESOURCE_BYTES + b"</p>")
    return root


async def exchange(tmp_path: Path, bus: McpBus, *frames: str) -> list[dict[str, Any]]:
    """Each frame sent in turn, with the reply it got."""
    async with trio.open_nursery() as nursery:
        _actor, _bus, port = await start_hostbridge(nursery, tmp_path, bus)
        async with await connect(port) as ws:
            await greet(ws)
            answers = []
            for frame in frames:
                await ws.send_message(frame)
                answer = await next_frame(ws)
                while answer["type"] != "shell.surface.reply":
                    answer = await next_frame(ws)
                answers.append(answer)
        nursery.cancel_scope.cancel()
    return answers


def refused_codes(bus: McpBus) -> list[str | None]:
    return [a.code for a in bus.audits if a.event == "hostbridge.surface_request_refused"]


async def test_a_surface_lists_and_reads_its_own_apps_ui_documents(tmp_path: Path) -> None:
    bus = McpBus(web(tmp_path))
    own = resource_uri(SCOPE, "main")
    listed, read = await exchange(
        tmp_path,
        bus,
        request("resources/list", request_id="l"),
        request("resources/read", {"uri": own}, request_id="r"),
    )
    assert own == f"ui://{SCOPE}/main"
    assert listed["result"] == {
        "resources": [
            {"uri": own, "name": "main", "mimeType": MCP_APP_MIME_TYPE, "_meta": {"ui": UI}},
            {"uri": f"ui://{SCOPE}/big", "name": "big", "mimeType": MCP_APP_MIME_TYPE},
            {"uri": f"ui://{SCOPE}/gone", "name": "gone", "mimeType": MCP_APP_MIME_TYPE},
        ]
    }
    # The document as the app ships it, not as the Surface is served (scripts moved out).
    assert read["result"] == {
        "contents": [{"uri": own, "mimeType": MCP_APP_MIME_TYPE, "text": PAGE, "_meta": {"ui": UI}}]
    }
    assert UI == {"csp": {"connectDomains": ["https://api.example.com"]}}
    assert refused_codes(bus) == []


@pytest.mark.parametrize(
    ("uri", "code"),
    [
        ("ui://otherapp/main", "resource_not_found"),
        (f"ui://{SCOPE}/nope", "resource_not_found"),
        (f"ui://{SCOPE}/gone", "resource_not_found"),
        (f"ui://{SCOPE}/../otherapp/main", "resource_not_found"),
        ("UI://otherapp/main", "resource_not_found"),
        (f"ui://{SCOPE}/big", "resource_too_large"),
    ],
    ids=["other-app", "unknown", "file-missing", "dot-dot", "other-app-upper", "too-large"],
)
async def test_a_read_of_what_is_not_the_apps_own_resource_is_refused_and_audited(
    tmp_path: Path, uri: str, code: str
) -> None:
    bus = McpBus(web(tmp_path))
    (answer,) = await exchange(tmp_path, bus, request("resources/read", {"uri": uri}))
    assert answer["error"] == {"code": code} and answer["result"] is None
    assert refused_codes(bus) == [code]
    assert not [a for a in bus.audits if uri in a.model_dump_json()]  # never the URI
    assert not [r for r in bus.requests if isinstance(r, SurfaceResourceReadRequest)]


async def test_a_read_of_any_other_uri_is_its_apps_servers_through_focus(tmp_path: Path) -> None:
    """Not a UI document, not `ui://`: the app's server's, as focus answers it (its contents,
    or its code, which focus audits)."""
    bus = McpBus(web(tmp_path))
    live, unknown = await exchange(
        tmp_path,
        bus,
        request("resources/read", {"uri": "data://x/note"}, request_id="a"),
        request("resources/read", {"uri": "file:///etc/passwd"}, request_id="b"),
    )
    assert live["result"] == {"contents": [NOTE]}
    assert unknown["error"] == {"code": "resource_not_found"} and unknown["result"] is None
    asked = [r for r in bus.requests if isinstance(r, SurfaceResourceReadRequest)]
    assert [(r.instance_id, r.surface_id, r.uri) for r in asked] == [
        (INSTANCE, SURFACE, "data://x/note"),
        (INSTANCE, SURFACE, "file:///etc/passwd"),
    ]
    assert refused_codes(bus) == []  # focus's refusal, audited there


async def test_the_apps_context_goes_to_the_router_as_its_own_bounded_and_rate_limited(
    tmp_path: Path,
) -> None:
    bus = McpBus(web(tmp_path))
    context = {"content": [{"type": "text", "text": "3 tasks due"}], "structuredContent": {"n": 3}}
    too_big = {"content": [{"type": "text", "text": "x" * MAX_MODEL_CONTEXT_BYTES}]}
    frames = [request("ui/update-model-context", context, request_id="c0")]
    frames.append(request("ui/update-model-context", too_big, request_id="big"))
    frames += [
        request("ui/update-model-context", {"content": []}, request_id=f"c{i}")
        for i in range(1, CONTEXT_BURST + 1)
    ]
    answers = await exchange(tmp_path, bus, *frames)
    assert answers[0]["result"] == {}
    assert answers[1]["error"] == {"code": "model_context_too_large"}
    assert [a["result"] for a in answers[2:-1]] == [{}] * (CONTEXT_BURST - 1)
    assert answers[-1]["error"] == {"code": "rate_limited"}
    told = [r for r in bus.requests if isinstance(r, SurfaceContextRequest)]
    assert told[0] == SurfaceContextRequest(
        instance_id=INSTANCE,
        app_scope=SCOPE,
        request_id="c0",
        content=("3 tasks due",),
        structured_content={"n": 3},
    )
    assert len(told) == CONTEXT_BURST
    assert refused_codes(bus) == ["model_context_too_large", "rate_limited"]
    assert "tasks" not in json.dumps([a.model_dump() for a in bus.audits])


async def test_a_context_with_what_the_spec_does_not_allow_is_refused(tmp_path: Path) -> None:
    bus = McpBus(web(tmp_path))
    image = {"content": [{"type": "image", "data": "AA==", "mimeType": "image/png"}]}
    (answer,) = await exchange(tmp_path, bus, request("ui/update-model-context", image))
    assert answer["error"] == {"code": "bridge_params_invalid"}
    assert not [r for r in bus.requests if isinstance(r, SurfaceContextRequest)]


def download(*files: dict[str, Any]) -> dict[str, Any]:
    return {"contents": [{"type": "resource", "resource": f} for f in files]}


async def test_each_file_the_app_offers_goes_to_the_gateway_in_turn(tmp_path: Path) -> None:
    bus = McpBus(web(tmp_path))
    csv = {"uri": "file:///reports/June%20sales.csv", "mimeType": "text/csv", "text": "a,b\n"}
    png = {"uri": "img.png", "mimeType": "image/png;x=1", "blob": "iVBORw0KGgo="}
    (saved,) = await exchange(
        tmp_path, bus, request("ui/download-file", download(csv, png), request_id="d")
    )
    assert saved["result"] == {}
    downloads = [r for r in bus.requests if isinstance(r, SurfaceDownloadRequest)]
    assert downloads == [
        SurfaceDownloadRequest(
            request_id="d:0",
            instance_id=INSTANCE,
            app_scope=SCOPE,
            name="June sales.csv",
            media_type="text/csv",
            content_b64=base64.b64encode(b"a,b\n").decode(),
        ),
        SurfaceDownloadRequest(
            request_id="d:1",
            instance_id=INSTANCE,
            app_scope=SCOPE,
            name="img.png",
            media_type="image/png",
            content_b64="iVBORw0KGgo=",
        ),
    ]


@pytest.mark.parametrize(
    ("decision", "code"),
    [
        ("cancelled_by_user", "cancelled_by_user"),
        ("permission_denied", "permission_denied"),
        ("expired", "operation_expired"),
        ("policy_denied", "policy_denied"),
    ],
)
async def test_the_users_no_to_a_download_is_a_result_not_an_error(
    tmp_path: Path, decision: str, code: str
) -> None:
    bus = McpBus(web(tmp_path))
    bus.decision, bus.code = decision, code
    one = {"uri": "a.txt", "mimeType": "text/plain", "text": "hi"}
    (answer,) = await exchange(
        tmp_path, bus, request("ui/download-file", download(one, one), request_id="d")
    )
    assert answer["result"] == {"isError": True} and answer["error"] is None
    # The first no ends it: the second file is not offered.
    assert [r.request_id for r in bus.requests if isinstance(r, SurfaceDownloadRequest)] == ["d:0"]


@pytest.mark.parametrize(
    ("decision", "code"),
    [
        ("failed", "provider_failed"),
        ("failed", "foreground_required"),
        ("permission_denied", "capability_denied"),  # the app never declared it: no user's no
        ("unsupported_on_host", "unsupported_on_host"),
    ],
)
async def test_a_download_that_fails_otherwise_is_an_error_with_its_code(
    tmp_path: Path, decision: str, code: str
) -> None:
    bus = McpBus(web(tmp_path))
    bus.decision, bus.code = decision, code
    one = {"uri": "a.txt", "mimeType": "text/plain", "text": "hi"}
    (answer,) = await exchange(tmp_path, bus, request("ui/download-file", download(one)))
    assert answer["error"] == {"code": code} and answer["result"] is None


@pytest.mark.parametrize(
    "params",
    [
        {"contents": []},
        {"contents": [{"type": "resource_link", "uri": "ui://x/y", "name": "y"}]},
        download({"uri": "a.txt", "mimeType": "text/plain"}),
        download({"uri": "a.txt", "mimeType": "text/plain", "text": "a", "blob": "YQ=="}),
        download(*[{"uri": "a.txt", "mimeType": "text/plain", "text": "a"}] * 5),
    ],
    ids=["none", "link", "no-content", "both", "too-many"],
)
async def test_a_download_the_bridge_cannot_take_is_refused_before_the_gateway(
    tmp_path: Path, params: dict[str, Any]
) -> None:
    bus = McpBus(web(tmp_path))
    (answer,) = await exchange(tmp_path, bus, request("ui/download-file", params))
    assert answer["error"] == {"code": "bridge_params_invalid"}
    assert not [r for r in bus.requests if isinstance(r, SurfaceDownloadRequest)]
    assert refused_codes(bus) == ["bridge_params_invalid"]


@pytest.mark.parametrize(
    ("uri", "name"),
    [
        ("file:///a/b/report.csv", "report.csv"),
        ("report%20final.txt", "report final.txt"),
        ("ui://app/..", "download"),
        ("https://x.test/a/<evil>\\name.txt", "_evil__name.txt"),
        ("", "download"),
    ],
)
def test_a_downloads_name_is_the_plain_last_segment_of_its_uri(uri: str, name: str) -> None:
    assert file_name(uri) == name
