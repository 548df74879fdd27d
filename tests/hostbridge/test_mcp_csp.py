"""An MCP App Surface's CSP built from the user's grant (`hostbridge/_mcp_csp.py`, issue 30)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lineup.hostbridge._mcp_csp import mcp_app_csp, shell_origin
from lineup.hostbridge._surface_book import (
    GRANT_LOAD_S,
    SurfaceBook,
    mcp_document_csp,
    surface_headers,
)
from lineup.sdk.mcp_apps import McpAppCsp, McpAppUi
from lineup.sdk.mcp_grants import DEVICES_CAPABILITY, MAX_DETAIL_CHARS, NETWORK_CAPABILITY

PORT = 8765
OWN = "http://127.0.0.1:8765/surfaces/i1/ http://localhost:8765/surfaces/i1/"
DECLARED = McpAppCsp(
    connect_domains=("https://api.example.com", "wss://live.example.com:8443"),
    resource_domains=("https://*.cdn.example.net",),
    frame_domains=("https://player.example.org",),
    base_uri_domains=("https://base.example.com",),
)


def directives(csp: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for part in csp.split(";"):
        name, *values = part.split()
        assert name not in out, name  # each directive once
        out[name] = values
    return out


def test_without_a_grant_the_policy_is_the_default_whatever_is_declared() -> None:
    default = mcp_document_csp(PORT, "i1", None, granted=False)
    assert mcp_document_csp(PORT, "i1", McpAppUi(csp=DECLARED), granted=False) == default
    assert mcp_document_csp(PORT, "i1", McpAppUi(csp=DECLARED), granted=True) != default
    # The default is the Surface's own for every response of an MCP App's page.
    assert surface_headers(PORT, "i1", mcp_app=True)["Content-Security-Policy"] == default
    d = directives(default)
    for name in ("connect-src", "frame-src", "base-uri", "object-src", "worker-src"):
        assert d[name] == ["'none'"], name
    assert d["script-src"] == OWN.split()
    assert d["style-src"] == [*OWN.split(), "'unsafe-inline'"]
    assert d["img-src"] == [*OWN.split(), "data:", "blob:"]


def test_a_grant_allows_exactly_the_declared_origins_in_their_directives() -> None:
    d = directives(mcp_document_csp(PORT, "i1", McpAppUi(csp=DECLARED), granted=True))
    assert d["connect-src"] == ["https://api.example.com", "wss://live.example.com:8443"]
    cdn = "https://*.cdn.example.net"
    assert d["img-src"] == [*OWN.split(), "data:", "blob:", cdn]
    assert d["font-src"] == [*OWN.split(), "data:", cdn]
    assert d["style-src"] == [*OWN.split(), "'unsafe-inline'", cdn]
    assert d["media-src"] == [*OWN.split(), "data:", "blob:", cdn]
    assert d["frame-src"] == ["https://player.example.org"]
    assert d["base-uri"] == ["https://base.example.com"]
    # Never a script of another origin (the runtime's guard heads every script), never `*`.
    assert d["script-src"] == OWN.split()
    assert all(v != "*" for values in d.values() for v in values)
    assert d["default-src"] == ["'none'"] and d["child-src"] == ["'none'"]


def test_a_granted_declaration_of_nothing_is_the_default() -> None:
    default = mcp_document_csp(PORT, "i1", None, granted=False)
    assert mcp_document_csp(PORT, "i1", McpAppUi(), granted=True) == default


@pytest.mark.parametrize(
    "origin",
    [
        f"http://127.0.0.1:{PORT}",
        f"http://localhost:{PORT}",
        f"ws://127.0.0.1:{PORT}",
        f"wss://localhost:{PORT}",
        f"http://*.localhost:{PORT}",
        f"http://app.localhost:{PORT}",
        f"http://*.0.0.1:{PORT}",
    ],
)
def test_the_shells_own_origin_is_never_granted(origin: str) -> None:
    assert shell_origin(origin, PORT)
    declared = McpAppCsp(connect_domains=(origin, "http://127.0.0.1:9999"))
    csp = mcp_app_csp(OWN, "x", PORT, declared, granted=True)
    assert directives(csp)["connect-src"] == ["http://127.0.0.1:9999"]
    only = mcp_app_csp(OWN, "x", PORT, McpAppCsp(frame_domains=(origin,)), granted=True)
    assert directives(only)["frame-src"] == ["'none'"]


def test_another_loopback_port_or_host_is_not_the_shell() -> None:
    assert not shell_origin("http://127.0.0.1:9999", PORT)
    assert not shell_origin("https://example.com", PORT)
    assert not shell_origin(f"http://example.com:{PORT}", PORT)


def test_a_grant_reaches_one_document_load_of_its_live_surface_only() -> None:
    book = SurfaceBook()
    net = NETWORK_CAPABILITY
    view = {"kind": "lineup.surface", "surface_id": "surface:i1"}
    book.grant("i1", net, granted=True, now=0)  # no Surface open: nothing kept
    book.view("i1", view, "mcpnet")
    assert not book.take("i1", net, now=0)
    book.grant("i1", net, granted=True, now=0)
    assert book.take("i1", net, now=1)
    assert not book.take("i1", net, now=1)  # the next load asks again
    book.grant("i1", net, granted=True, now=0)
    book.grant("i1", net, granted=False, now=1)  # a later no takes it back
    assert not book.take("i1", net, now=2)
    book.grant("i1", net, granted=True, now=0)
    assert not book.take("i1", net, now=GRANT_LOAD_S + 1)  # a load long after: not asked for
    book.grant("i1", net, granted=True, now=0)
    book.view("i1", {"kind": "lineup.surface", "surface_id": "surface:i1b"}, "mcpnet")
    assert not book.take("i1", net, now=0)  # another Surface: the grant was not its
    book.grant("i1", net, granted=True, now=0)
    book.live(set())
    assert not book.take("i1", net, now=0)  # the instance is gone


def test_the_shell_names_the_grants_and_bounds_their_detail_as_the_runtime_does() -> None:
    js = Path(__file__).resolve().parents[2] / "hostbridge" / "web" / "js" / "components"
    surface = (js / "surface.js").read_text()
    assert f'export const NETWORK_CAPABILITY = "{NETWORK_CAPABILITY}";' in surface
    assert f'export const DEVICES_CAPABILITY = "{DEVICES_CAPABILITY}";' in surface
    prompt = (js / "permission_prompt.js").read_text()
    assert f"const MAX_DETAIL = {MAX_DETAIL_CHARS};" in prompt
