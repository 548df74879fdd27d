"""Surfaces at the hostbridge (issue 13): an open Surface's files under their own CSP, and the
bridge's requests checked again, relayed to focus and answered to the Shell that asked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio
from pydantic import ValidationError
from trio_websocket import WebSocketConnection

import lineup.hostbridge._surfaces as surfaces_module
from lineup.actors.focus.messages import (
    AppView,
    SurfaceAccepted,
    SurfaceAssetsReply,
    SurfaceAssetsRequest,
    SurfaceEventRequest,
    SurfaceSessionDataRequest,
    ViewsReply,
    ViewsRequest,
)
from lineup.actors.gateway.messages import CapabilityResult, SurfaceCapabilityRequest
from lineup.actors.kernel import ErrorCode, LineUpError, Message
from lineup.hostbridge import HostbridgeActor
from lineup.hostbridge._mcp_document import split_inline_scripts
from lineup.hostbridge._server import (
    SURFACE_REQUESTS_BURST,
    Reply,
    ShellAccess,
    ShellHub,
    _listen,
)
from lineup.hostbridge._surface_book import surface_file
from lineup.hostbridge._surface_guard import guarded_script
from lineup.hostbridge.messages import (
    AppsUpdatedEvent,
    SessionDataUpdatedEvent,
    SurfaceNotifyEvent,
    ViewUpdatedEvent,
)
from lineup.hostbridge.shell_protocol import (
    RUNTIME_TO_SHELL,
    SHELL_TO_RUNTIME,
    ShellAction,
    ShellArtifacts,
    ShellOutbound,
    ShellSessionData,
    ShellSurfaceNotify,
    ShellSurfaceReply,
    SurfaceError,
    SurfaceRequestFrame,
    encode,
)
from lineup.sdk.capabilities import CapabilityStatus
from lineup.sdk.manifest import SURFACE_CLIENT, SURFACE_CLIENT_URL
from lineup.sdk.mcp_apps import McpAppCsp, McpAppUi
from lineup.sdk.mcp_grants import DEVICES_CAPABILITY, NETWORK_CAPABILITY
from lineup.tests.support.shell import open_shell_socket, shell_at

from .test_actor import TOKEN, FakeBus, from_peer, next_frame, start_hostbridge
from .test_server import _get, _never_refused, _no_greeting, _Socket

SURFACE_WEB = Path(__file__).resolve().parents[1] / "browser" / "surface_web"
INSTANCE = "surfacetest-1"
SURFACE = "lu:surface:" + INSTANCE
SCOPE = "surfacetest"
INLINE = ("_lineup/inline/0.js", "_lineup/inline/1.js")  # an MCP App page's moved scripts


def surface_view(**fields: Any) -> dict[str, Any]:
    return {
        "kind": "lineup.surface",
        "surface_id": SURFACE,
        "entrypoint": "main",
        "surface_version": 1,
        "label": "Test Surface",
        "state": {"step": 1},
        "state_revision": 0,
        **fields,
    }


def instances(*ids: str, state: str = "foreground") -> tuple[dict[str, Any], ...]:
    return tuple(
        {"instance_id": i, "app_scope": SCOPE, "state": state, "title": "Test Surface"} for i in ids
    )


class SurfaceBus(FakeBus):
    """FakeBus with a focus that has one instance with an open Surface (its files in
    `web_root`) and that instance's session data."""

    def __init__(
        self,
        web_root: Path = SURFACE_WEB,
        view: dict[str, Any] | None = None,
        *,
        mcp_app: bool = False,
        mcp_ui: McpAppUi | None = None,
        document: str = "index.html",
    ) -> None:
        super().__init__()
        self.web_root = web_root
        self.document = document
        self.mcp_app = mcp_app
        self.mcp_ui = mcp_ui
        self.capability_status: CapabilityStatus = "permission_denied"
        self.capability_gate: trio.Event | None = None  # set: the gateway answers once it is
        self.view = surface_view() if view is None else view
        self.open = {INSTANCE: SURFACE}  # instance → its open Surface, as focus says
        self.data: dict[str, Any] | None = None
        self.revision = 0
        self.event_error: ErrorCode | None = None

    def _ok(self, body: SurfaceEventRequest | SurfaceSessionDataRequest) -> None:
        if self.open.get(body.instance_id) != body.surface_id:
            raise LineUpError(ErrorCode.SURFACE_NOT_FOUND, "no such Surface")

    async def request(self, peer: str, body: Message, **kwargs: Any) -> Message:
        if isinstance(body, ViewsRequest):
            self.requests.append(body)
            self.changed.set()
            view = AppView(app_scope=SCOPE, instance_id=INSTANCE, view=self.view)
            return ViewsReply(views=(view,), foreground=INSTANCE, instances=instances(INSTANCE))
        if isinstance(body, SurfaceAssetsRequest):
            self.requests.append(body)
            self.changed.set()
            if body.instance_id not in self.open:
                raise LineUpError(ErrorCode.SURFACE_NOT_FOUND, "no open Surface")
            return SurfaceAssetsReply(
                instance_id=body.instance_id,
                surface_id=self.open[body.instance_id],
                web_root=str(self.web_root),
                document=self.document,
                mcp_app=self.mcp_app,
                mcp_ui=self.mcp_ui,
            )
        if isinstance(body, SurfaceEventRequest):
            self.requests.append(body)
            self.changed.set()
            self._ok(body)
            if self.event_error is not None:
                raise LineUpError(self.event_error, "app down")
            return SurfaceAccepted(instance_id=body.instance_id, surface_id=body.surface_id)
        if isinstance(body, SurfaceSessionDataRequest):
            self.requests.append(body)
            self.changed.set()
            self._ok(body)
            if body.op == "replace":
                if body.expected_revision != self.revision:
                    raise LineUpError(ErrorCode.STALE_REVISION, "stale")
                self.data, self.revision = body.data, self.revision + 1
            return SurfaceAccepted(
                instance_id=body.instance_id,
                surface_id=body.surface_id,
                revision=self.revision,
                data=None if body.op == "replace" else self.data,
            )
        if isinstance(body, SurfaceCapabilityRequest):
            # The gateway of an app that declares no capability (tests/hostbridge/
            # test_capabilities.py has one that asks the user).
            self.requests.append(body)
            self.changed.set()
            if self.capability_gate is not None:
                await self.capability_gate.wait()  # the user has not answered yet
            completed = self.capability_status == "completed"
            return CapabilityResult(
                request_id=body.request_id,
                capability=body.capability,
                status=self.capability_status,
                code=None if completed else ErrorCode.CAPABILITY_DENIED.value,
                output={} if completed else None,
            )
        return await super().request(peer, body, **kwargs)


def show_surface(actor: HostbridgeActor, view: dict[str, Any] | None = None) -> None:
    """focus's events for the instance: live and in front, its view the Surface."""
    actor.on_apps(
        *from_peer("focus", AppsUpdatedEvent(foreground=INSTANCE, instances=instances(INSTANCE)))
    )
    actor.on_view(
        *from_peer(
            "focus",
            ViewUpdatedEvent(app_scope=SCOPE, instance_id=INSTANCE, view=view or surface_view()),
        )
    )


def expected_csp(port: int, instance: str = INSTANCE) -> str:
    own = (
        f"http://127.0.0.1:{port}/surfaces/{instance}/ http://localhost:{port}/surfaces/{instance}/"
    )
    return (
        f"default-src 'none'; script-src {own}; style-src {own}; img-src data: blob:; "
        "connect-src 'none'; font-src 'none'; media-src 'none'; object-src 'none'; "
        "frame-src 'none'; child-src 'none'; worker-src 'none'; manifest-src 'none'; "
        "base-uri 'none'; form-action 'none'; "
        f"frame-ancestors http://127.0.0.1:{port} http://localhost:{port}"
    )


# ---------------------------------------------------------------------- files


async def test_an_open_surfaces_files_are_served_under_its_own_csp_and_asked_for_once(
    tmp_path: Path,
) -> None:
    async with trio.open_nursery() as nursery:
        actor, bus, port = await start_hostbridge(nursery, tmp_path, SurfaceBus())
        show_surface(actor)
        base = f"/surfaces/{INSTANCE}"
        answers = {
            p: await _get(port, f"{base}/{p}") for p in ["index.html", "surface.js", "surface.css"]
        }
        missing = await _get(port, f"{base}/nothing.js")
        hidden = [
            await _get(port, f"{base}/{p}")
            for p in ["%2e%2e/test_surface_render.py", "..%2fconftest.py", ".hidden.js", "x.py"]
        ]
        foreign = await _get(port, f"{base}/index.html", host="evil.example")
        shell = await _get(port, "/")
        nursery.cancel_scope.cancel()
    for status, headers, _body in answers.values():
        assert status == 200
        assert headers["content-security-policy"] == expected_csp(port)
        assert headers["x-content-type-options"] == "nosniff"
        assert headers["referrer-policy"] == "no-referrer"
        assert headers["cache-control"] == "no-store"
        assert headers["cross-origin-resource-policy"] == "cross-origin"
    assert answers["index.html"][1]["content-type"].startswith("text/html")
    assert answers["surface.js"][1]["content-type"].startswith("text/javascript")
    assert answers["index.html"][2] == (SURFACE_WEB / "index.html").read_bytes()
    # Every script with the runtime's guard first (no WebRTC), the rest as it is.
    assert answers["surface.js"][2] == guarded_script((SURFACE_WEB / "surface.js").read_bytes())
    assert missing[0] == 404 and missing[1]["content-security-policy"] == expected_csp(port)
    assert [h[0] for h in hidden] == [404] * 4
    assert foreign[0] == 403
    # Focus was asked where the files are once, for every file after.
    assert [r for r in bus.requests if isinstance(r, SurfaceAssetsRequest)] == [
        SurfaceAssetsRequest(instance_id=INSTANCE)
    ]
    # The Shell's own page may frame them (and nothing else was loosened).
    assert shell[1]["content-security-policy"] == ShellAccess(port=port, token="t").csp()
    assert "frame-src 'self';" in shell[1]["content-security-policy"]
    assert "frame-ancestors 'none'" in shell[1]["content-security-policy"]


async def test_every_open_surface_gets_the_runtimes_bridge_client_and_no_other_reserved_file(
    tmp_path: Path,
) -> None:
    async with trio.open_nursery() as nursery:
        actor, _, port = await start_hostbridge(nursery, tmp_path, SurfaceBus())
        base = f"/surfaces/{INSTANCE}"
        before = await _get(port, f"{base}/{SURFACE_CLIENT_URL}")  # no Surface open yet
        show_surface(actor)
        client = await _get(port, f"{base}/{SURFACE_CLIENT_URL}")
        reserved = [await _get(port, f"{base}/_lineup/{p}") for p in ("x.js", "index.html")]
        nursery.cancel_scope.cancel()
    assert before[0] == 404
    status, headers, body = client
    assert status == 200 and body == guarded_script(SURFACE_CLIENT.read_bytes())  # guard first
    assert headers["content-type"].startswith("text/javascript")
    assert headers["content-security-policy"] == expected_csp(port)
    assert [r[0] for r in reserved] == [404, 404]  # `_lineup/` is the runtime's, never the app's


async def test_an_mcp_apps_page_is_served_with_its_inline_scripts_moved_out_and_guarded(
    tmp_path: Path,
) -> None:
    web = tmp_path / "web"
    web.mkdir()
    page = (
        b'<html><head><script type="module">go()</script><style>p{}</style></head>'
        b"<body><script>run()</script></body></html>"
    )
    (web / "index.html").write_bytes(page)
    (web / "chunk.js").write_bytes(b"export const x = 1;")
    async with trio.open_nursery() as nursery:
        actor, _, port = await start_hostbridge(
            nursery, tmp_path, SurfaceBus(web_root=web, mcp_app=True)
        )
        show_surface(actor)
        base = f"/surfaces/{INSTANCE}"
        document = await _get(port, f"{base}/index.html")
        moved = [await _get(port, f"{base}/_lineup/inline/{n}.js") for n in (0, 1)]
        beyond = [await _get(port, f"{base}/_lineup/inline/{p}") for p in ("2.js", "01.js", "x.js")]
        chunk = await _get(port, f"{base}/chunk.js")
        nursery.cancel_scope.cancel()
    assert document[0] == 200
    assert document[2] == split_inline_scripts(page, f"{base}/").html
    assert b"go()" not in document[2] and b"<style>p{}</style>" in document[2]
    csp = document[1]["content-security-policy"]
    own = f"http://127.0.0.1:{port}{base}/ http://localhost:{port}{base}/"
    # Inline style and its own images, fonts and media, as the spec's default allows; never
    # inline script, nor any network.
    assert f"script-src {own};" in csp and f"style-src {own} 'unsafe-inline';" in csp
    assert f"img-src {own} data: blob:;" in csp and "connect-src 'none';" in csp
    assert "access-control-allow-origin" not in document[1]
    assert [(m[0], m[2]) for m in moved] == [
        (200, guarded_script(b"go()")),
        (200, guarded_script(b"run()")),
    ]
    # A module is a CORS load from the frame's opaque origin: its public code, to any page.
    assert all(m[1]["access-control-allow-origin"] == "*" for m in moved)
    assert all(m[1]["content-security-policy"] == csp for m in moved)
    assert [b[0] for b in beyond] == [404, 404, 404]
    assert chunk[0] == 200 and chunk[2] == guarded_script(b"export const x = 1;")
    assert chunk[1]["access-control-allow-origin"] == "*"


async def test_the_framed_page_of_an_mcp_app_is_its_entrypoints_document(
    tmp_path: Path,
) -> None:
    # An MCP server's UIs share its app's `web/` folder, each its entrypoint's document
    # (`lineup.sdk.mcp_ui`); the Shell frames every Surface at `index.html`.
    web = tmp_path / "web"
    (web / "mcp-ui").mkdir(parents=True)
    page = b"<html><body><script>run()</script><p>ours</p></body></html>"
    (web / "mcp-ui" / "srv-page.html").write_bytes(page)
    (web / "index.html").write_bytes(b"<p>another page</p>")
    bus = SurfaceBus(web_root=web, mcp_app=True, document="mcp-ui/srv-page.html")
    async with trio.open_nursery() as nursery:
        actor, _, port = await start_hostbridge(nursery, tmp_path, bus)
        show_surface(actor)
        base = f"/surfaces/{INSTANCE}"
        framed = await _get(port, f"{base}/index.html")
        moved = await _get(port, f"{base}/_lineup/inline/0.js")
        nursery.cancel_scope.cancel()
    assert framed[0] == 200 and framed[2] == split_inline_scripts(page, f"{base}/").html
    assert moved[0] == 200 and moved[2] == guarded_script(b"run()")


def test_the_shell_frames_the_document_the_hostbridge_serves_there() -> None:
    shell = Path(surfaces_module.__file__).parent / "web" / "js"
    surface_js = (shell / "components" / "surface.js").read_text()
    assert f'const DOCUMENT = "{surfaces_module.FRAMED_DOCUMENT}";' in surface_js


async def test_a_granted_network_reaches_the_next_load_of_an_mcp_apps_page_only(
    tmp_path: Path,
) -> None:
    web = tmp_path / "web"
    web.mkdir()
    (web / "index.html").write_bytes(b"<html><body><p>net</p></body></html>")
    ui = McpAppUi(csp=McpAppCsp(connect_domains=("https://api.example.com",)))
    bus = SurfaceBus(web_root=web, mcp_app=True, mcp_ui=ui)
    document = f"/surfaces/{INSTANCE}/index.html"

    async def connect_src(port: int) -> str:
        status, headers, _ = await _get(port, document)
        assert status == 200
        csp = headers["content-security-policy"]
        return csp.split("connect-src ", 1)[1].split(";", 1)[0]

    async with trio.open_nursery() as nursery:
        _, _, port = await start_hostbridge(nursery, tmp_path, bus)
        async with await connect(port) as ws:
            await greet(ws)
            loads = [await connect_src(port)]  # before anything is granted
            asked: list[tuple[str, CapabilityStatus]] = [
                (NETWORK_CAPABILITY, "permission_denied"),
                (DEVICES_CAPABILITY, "completed"),  # another capability grants no network
                (NETWORK_CAPABILITY, "completed"),
                (NETWORK_CAPABILITY, "completed"),
                (NETWORK_CAPABILITY, "cancelled_by_user"),  # the latest answer stands
            ]
            for n, (capability, status) in enumerate(asked):
                bus.capability_status = status
                params = {"capability": capability, "purpose": "to reach its server"}
                await ws.send_message(
                    request("lineup/capabilities/request", params, request_id=f"g{n}")
                )
                reply = await next_frame(ws)
                assert reply["result"]["status"] == status
                if n != 3:  # the third grant's page is not loaded before the next answer
                    loads.append(await connect_src(port))
            loads.append(await connect_src(port))  # the grant went with the load before
        nursery.cancel_scope.cancel()
    granted = "https://api.example.com"
    assert loads == ["'none'", "'none'", "'none'", granted, "'none'", "'none'"]


async def test_an_mcp_apps_page_is_split_once_until_its_file_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    web = tmp_path / "web"
    web.mkdir()
    page = web / "index.html"
    page.write_bytes(b"<script>one()</script><script>two()</script>")
    splits: list[bytes] = []
    real = split_inline_scripts

    def counted(document: bytes, prefix: str) -> Any:
        splits.append(document)
        return real(document, prefix)

    monkeypatch.setattr(surfaces_module, "split_inline_scripts", counted)
    async with trio.open_nursery() as nursery:
        actor, _, port = await start_hostbridge(
            nursery, tmp_path, SurfaceBus(web_root=web, mcp_app=True)
        )
        show_surface(actor)
        base = f"/surfaces/{INSTANCE}"
        first = [await _get(port, f"{base}/{p}") for p in ("index.html", *INLINE)]
        page.write_bytes(b"<script>three()</script><script>four()</script><p>saved</p>")
        again = [await _get(port, f"{base}/{p}") for p in ("index.html", *INLINE)]
        nursery.cancel_scope.cancel()
    assert len(splits) == 2  # one read per version of the file, not one per response
    assert [a[2] for a in first[1:]] == [guarded_script(b"one()"), guarded_script(b"two()")]
    assert [a[2] for a in again[1:]] == [guarded_script(b"three()"), guarded_script(b"four()")]


async def test_a_lineup_surface_has_no_moved_scripts_and_no_cors(tmp_path: Path) -> None:
    async with trio.open_nursery() as nursery:
        actor, _, port = await start_hostbridge(nursery, tmp_path, SurfaceBus())
        show_surface(actor)
        base = f"/surfaces/{INSTANCE}"
        moved = await _get(port, f"{base}/_lineup/inline/0.js")
        script = await _get(port, f"{base}/surface.js")
        nursery.cancel_scope.cancel()
    assert moved[0] == 404
    assert script[0] == 200 and "access-control-allow-origin" not in script[1]


async def test_files_are_served_only_while_the_instance_is_live_and_its_view_that_surface(
    tmp_path: Path,
) -> None:
    async with trio.open_nursery() as nursery:
        actor, bus, port = await start_hostbridge(nursery, tmp_path, SurfaceBus())
        url = f"/surfaces/{INSTANCE}/index.html"
        before = await _get(port, url)  # no view yet: focus is not even asked
        show_surface(actor)
        shown = await _get(port, url)
        actor.on_view(
            *from_peer(
                "focus", ViewUpdatedEvent(app_scope=SCOPE, instance_id=INSTANCE, view={"kind": "x"})
            )
        )
        closed = await _get(port, url)
        show_surface(actor)
        again = await _get(port, url)
        actor.on_apps(*from_peer("focus", AppsUpdatedEvent(foreground="chat", instances=())))
        gone = await _get(port, url)
        show_surface(actor)
        bus.open = {}  # focus says none is open (the view saying so is on its way)
        actor.on_view(
            *from_peer(
                "focus",
                ViewUpdatedEvent(
                    app_scope=SCOPE, instance_id=INSTANCE, view=surface_view(surface_id="lu:other")
                ),
            )
        )
        refused = await _get(port, url)
        nursery.cancel_scope.cancel()
    assert [a[0] for a in (before, shown, closed, again, gone, refused)] == [
        404,
        200,
        404,
        200,
        404,
        404,
    ]
    # Asked again after each change of view (the cache is forgotten), never before a view.
    assert len([r for r in bus.requests if isinstance(r, SurfaceAssetsRequest)]) == 3


def test_a_surface_file_is_resolved_inside_its_root_only(tmp_path: Path) -> None:
    root = tmp_path / "web"
    (root / "sub").mkdir(parents=True)
    (root / "index.html").write_text("x")
    (root / "sub" / "a.js").write_text("x")
    (root / "image.png").write_bytes(b"x")
    (tmp_path / "secret.js").write_text("x")
    (root / "link.js").symlink_to(tmp_path / "secret.js")
    assert surface_file(root, "index.html") == (
        (root / "index.html").resolve(),
        "text/html; charset=utf-8",
    )
    assert surface_file(root, "sub/a.js") is not None
    assert surface_file(root, "image.png") == ((root / "image.png").resolve(), "image/png")
    for bad in ["", "../secret.js", "sub/../../secret.js", "link.js", ".x.js", "sub", "a\\b.js"]:
        assert surface_file(root, bad) is None, bad
    assert surface_file(tmp_path / "missing", "index.html") is None


# ---------------------------------------------------------------------- bridge requests


async def connect(port: int) -> Any:
    return open_shell_socket(shell_at(port, TOKEN))


async def greet(ws: WebSocketConnection) -> list[dict[str, Any]]:
    await ws.send_message(json.dumps({"type": "shell.ready"}))
    frames = [await next_frame(ws)]
    while frames[-1]["type"] != "shell.view":
        frames.append(await next_frame(ws))
    return frames


def request(method: str, params: dict[str, Any] | None = None, **fields: Any) -> str:
    frame = {
        "type": "surface.request",
        "request_id": fields.pop("request_id", "r1"),
        "instance_id": INSTANCE,
        "surface_id": SURFACE,
        "method": method,
        "params": params or {},
        **fields,
    }
    return json.dumps(frame, ensure_ascii=False)


async def test_bridge_requests_are_relayed_to_focus_and_answered_to_the_shell_that_asked(
    tmp_path: Path,
) -> None:
    async with trio.open_nursery() as nursery:
        actor, bus, port = await start_hostbridge(nursery, tmp_path, SurfaceBus())
        async with await connect(port) as ws, await connect(port) as other:
            await greet(ws)
            await greet(other)
            await ws.send_message(request("lineup/session-data/subscribe", request_id="a"))
            subscribed = await next_frame(ws)
            await ws.send_message(
                request(
                    "lineup/session-data/replace",
                    {"data": {"n": 1}, "expected_revision": 0},
                    request_id="b",
                )
            )
            replaced = await next_frame(ws)
            await ws.send_message(
                request(
                    "lineup/session-data/replace",
                    {"data": {"n": 2}, "expected_revision": 0},
                    request_id="c",
                )
            )
            stale = await next_frame(ws)
            await ws.send_message(request("lineup/session-data/get", request_id="d"))
            got = await next_frame(ws)
            await ws.send_message(
                request(
                    "lineup/event", {"name": "board.patch", "data": {"ops": []}}, request_id="e"
                )
            )
            event = await next_frame(ws)
            bus.event_error = ErrorCode.ACTOR_RESTARTED
            await ws.send_message(request("lineup/event", {"name": "x"}, request_id="f"))
            restarted = await next_frame(ws)
            # The other Shell got none of those replies: its next frame is the next broadcast.
            actor.on_session_data(
                *from_peer(
                    "focus",
                    SessionDataUpdatedEvent(
                        instance_id=INSTANCE, surface_id=SURFACE, data={"n": 1}, revision=1
                    ),
                )
            )
            assert await next_frame(other) == {
                "type": "shell.session_data",
                "instance_id": INSTANCE,
                "surface_id": SURFACE,
                "data": {"n": 1},
                "revision": 1,
            }
            assert (await next_frame(ws))["type"] == "shell.session_data"
        nursery.cancel_scope.cancel()

    def reply(request_id: str, **answer: Any) -> dict[str, Any]:
        base = {"result": None, "error": None}
        return {
            "type": "shell.surface.reply",
            "request_id": request_id,
            "instance_id": INSTANCE,
            "surface_id": SURFACE,
            **base,
            **answer,
        }

    assert subscribed == reply("a", result={"data": None, "revision": 0})
    assert replaced == reply("b", result={"revision": 1})
    assert stale == reply("c", error={"code": "stale_revision"})
    assert got == reply("d", result={"data": {"n": 1}, "revision": 1})
    assert event == reply("e", result={})
    assert restarted == reply("f", error={"code": "actor_restarted"})
    relayed = [
        r for r in bus.requests if isinstance(r, SurfaceSessionDataRequest | SurfaceEventRequest)
    ]
    assert [getattr(r, "op", None) or r.type for r in relayed] == [
        "subscribe",
        "replace",
        "replace",
        "get",
        "focus.ui.surface.event",
        "focus.ui.surface.event",
    ]
    assert relayed[4] == SurfaceEventRequest(
        instance_id=INSTANCE, surface_id=SURFACE, name="board.patch", data={"ops": []}
    )
    # focus's own refusals are focus's to audit; the hostbridge refused nothing here.
    assert not [a for a in bus.audits if a.event == "hostbridge.surface_request_refused"]


BIG = "é" * 40_000  # 80,000 bytes of UTF-8 in 40,000 characters: inside a Shell frame


@pytest.mark.parametrize(
    ("frame", "code"),
    [
        (request("lineup/session-data/get", surface_id="lu:surface:other"), "surface_not_found"),
        (request("lineup/session-data/get", instance_id="gone-1"), "app_instance_not_found"),
        (request("ui/initialize"), "bridge_method_unknown"),
        (request("lineup/open-window"), "bridge_method_unknown"),
        (request("lineup/session-data/get", {"x": 1}), "bridge_params_invalid"),
        (request("lineup/session-data/replace", {"data": {}}), "bridge_params_invalid"),
        (
            request("lineup/session-data/replace", {"data": {}, "expected_revision": "1"}),
            "bridge_params_invalid",
        ),
        (request("lineup/event", {"name": ""}), "bridge_params_invalid"),
        (request("lineup/event", {"name": "x", "data": {"t": BIG}}), "bridge_message_too_large"),
        (request("lineup/agent-messages/list", {"after": "7"}), "bridge_params_invalid"),
        (
            request("lineup/agent-messages/subscribe", {"types": ["lineup.v1.tool.call"]}),
            "bridge_params_invalid",
        ),
        (request("lineup/agent-messages/acknowledge", {}), "bridge_params_invalid"),
        (request("lineup/state/subscribe", {"x": 1}), "bridge_params_invalid"),
    ],
    ids=[
        "other-surface",
        "gone-instance",
        "shell-method",
        "undeclared",
        "extra-param",
        "no-revision",
        "string-revision",
        "empty-name",
        "oversized",
        "not-a-cursor",
        "not-a-handed-type",
        "ack-no-id",
        "state-extra-param",
    ],
)
async def test_a_bridge_request_that_fails_a_check_is_answered_with_its_code_and_audited(
    tmp_path: Path, frame: str, code: str
) -> None:
    async with trio.open_nursery() as nursery:
        _actor, bus, port = await start_hostbridge(nursery, tmp_path, SurfaceBus())
        async with await connect(port) as ws:
            await greet(ws)
            await ws.send_message(frame)
            answer = await next_frame(ws)
        nursery.cancel_scope.cancel()
    assert answer["type"] == "shell.surface.reply"
    assert answer["error"] == {"code": code} and answer["result"] is None
    assert not [
        r for r in bus.requests if isinstance(r, SurfaceSessionDataRequest | SurfaceEventRequest)
    ]
    refused = [a for a in bus.audits if a.event == "hostbridge.surface_request_refused"]
    assert [(a.code, a.message_type, a.peer) for a in refused] == [
        (code, "surface.request", "user")
    ]
    assert "é" not in refused[0].model_dump_json()  # never the params


async def test_bridge_requests_past_the_shells_rate_are_refused_and_others_still_pass() -> None:
    texts = [request("lineup/session-data/get")] * (SURFACE_REQUESTS_BURST * 2)
    texts.append(json.dumps({"type": "ui.intent", "intent": "focus", "instance_id": "x"}))
    flags: list[bool] = []
    done = trio.Event()

    class Host:
        async def file(self, instance_id: str, path: str) -> None:
            raise AssertionError

        def headers(self, instance_id: str) -> dict[str, str]:
            raise AssertionError

        async def request(self, frame: SurfaceRequestFrame, reply: Reply, *, limited: bool) -> None:
            flags.append(limited)

    async def inbound(frame: ShellAction) -> None:
        done.set()

    send, _receive = ShellHub().join()
    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(
                _listen, _Socket(*texts), send, _no_greeting, inbound, _never_refused, Host()
            )
            await done.wait()
            nursery.cancel_scope.cancel()
    taken = flags.count(False)
    assert SURFACE_REQUESTS_BURST <= taken <= SURFACE_REQUESTS_BURST + 5
    assert len(flags) == SURFACE_REQUESTS_BURST * 2


async def test_the_shells_bridge_reports_are_audited_by_code_and_within_the_frame_budget(
    tmp_path: Path,
) -> None:
    async with trio.open_nursery() as nursery:
        _actor, bus, port = await start_hostbridge(nursery, tmp_path, SurfaceBus())
        async with await connect(port) as ws:
            await greet(ws)
            for frame in [
                {
                    "type": "surface.rejected",
                    "instance_id": INSTANCE,
                    "code": "bridge_method_unknown",
                    "count": 3,
                },
                {
                    "type": "surface.rejected",
                    "instance_id": None,
                    "code": "bridge_source_invalid",
                    "count": 1,
                },
                {"type": "surface.unavailable", "instance_id": INSTANCE, "surface_id": SURFACE},
                {"type": "surface.rejected", "code": "Not A Code!", "count": 1},
            ]:
                await ws.send_message(json.dumps(frame))
            await bus.until(lambda: len(bus.audits) >= 4)
        nursery.cancel_scope.cancel()
    rows = [(a.event, a.code, a.message_type, a.subject_id) for a in bus.audits]
    assert rows == [
        (
            "hostbridge.surface_rejected",
            "bridge_method_unknown",
            "surface.rejected",
            f"3:{INSTANCE}",
        ),
        ("hostbridge.surface_rejected", "bridge_source_invalid", "surface.rejected", "1:"),
        ("hostbridge.surface_unavailable", "surface_unavailable", "surface.unavailable", INSTANCE),
        ("hostbridge.shell_frame_refused", "invalid_arguments", "surface.rejected", None),
    ]


async def test_session_data_of_a_surface_no_longer_shown_is_not_pushed(tmp_path: Path) -> None:
    async with trio.open_nursery() as nursery:
        actor, _bus, port = await start_hostbridge(nursery, tmp_path, SurfaceBus())
        async with await connect(port) as ws:
            await greet(ws)
            for surface_id, revision in [("lu:surface:old", 5), (SURFACE, 2)]:
                actor.on_session_data(
                    *from_peer(
                        "focus",
                        SessionDataUpdatedEvent(
                            instance_id=INSTANCE,
                            surface_id=surface_id,
                            data=None,
                            revision=revision,
                        ),
                    )
                )
            frame = await next_frame(ws)
        nursery.cancel_scope.cancel()
    assert (frame["surface_id"], frame["revision"]) == (SURFACE, 2)


async def test_news_for_a_surface_no_longer_shown_is_not_pushed(tmp_path: Path) -> None:
    async with trio.open_nursery() as nursery:
        actor, _bus, port = await start_hostbridge(nursery, tmp_path, SurfaceBus())
        async with await connect(port) as ws:
            await greet(ws)
            for surface_id, seq in [("lu:surface:old", 5), (SURFACE, 2)]:
                actor.on_surface_notify(
                    *from_peer(
                        "focus",
                        SurfaceNotifyEvent(
                            instance_id=INSTANCE,
                            surface_id=surface_id,
                            kind="app_state",
                            params={"view": {}, "seq": seq},
                        ),
                    )
                )
            frame = await next_frame(ws)
        nursery.cancel_scope.cancel()
    assert (frame["type"], frame["surface_id"], frame["params"]["seq"]) == (
        "shell.surface.notify", SURFACE, 2,
    )  # fmt: skip


# ---------------------------------------------------------------------- the frames


@pytest.mark.parametrize(
    "frame",
    [
        ShellSurfaceReply(
            request_id="s1-1", instance_id=INSTANCE, surface_id=SURFACE, result={"revision": 2}
        ),
        ShellSurfaceReply(
            request_id="s1-2",
            instance_id=INSTANCE,
            surface_id=SURFACE,
            error=SurfaceError(code="stale_revision"),
        ),
        ShellSessionData(instance_id=INSTANCE, surface_id=SURFACE, data={"n": 1}, revision=3),
        ShellArtifacts(artifacts=({"artifact_id": "art_1", "ticket": "ab"},)),
        ShellSurfaceNotify(
            instance_id=INSTANCE, surface_id=SURFACE, kind="agent_messages", params={"messages": []}
        ),
    ],
    ids=["result", "error", "session-data", "artifacts", "notify"],
)
def test_every_surface_frame_encodes_to_what_the_union_reads_back(frame: ShellOutbound) -> None:
    assert RUNTIME_TO_SHELL.validate_json(encode(frame)) == frame


@pytest.mark.parametrize(
    "frame",
    [
        {
            "type": "surface.request",
            "request_id": "x" * 65,
            "instance_id": "i",
            "surface_id": "s",
            "method": "m",
        },
        {
            "type": "surface.request",
            "request_id": "r",
            "instance_id": "i",
            "surface_id": "s",
            "method": "",
        },
        {
            "type": "surface.request",
            "request_id": "r",
            "instance_id": "i",
            "surface_id": "s",
            "method": "m",
            "extra": 1,
        },
        {"type": "surface.rejected", "code": "bridge_source_invalid", "count": 0},
        {"type": "surface.rejected", "code": "x" * 65, "count": 1},
        {"type": "surface.unavailable", "instance_id": "i"},
    ],
    ids=[
        "long-request-id",
        "empty-method",
        "unknown-field",
        "zero-count",
        "long-code",
        "no-surface",
    ],
)
def test_a_surface_frame_outside_the_protocol_is_refused(frame: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        SHELL_TO_RUNTIME.validate_json(json.dumps(frame))
