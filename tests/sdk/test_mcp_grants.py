"""An MCP App page's declared network and devices as capabilities (`lineup.sdk.mcp_grants`)."""

from __future__ import annotations

from lineup.sdk import capabilities as caps
from lineup.sdk.manifest import Manifest
from lineup.sdk.mcp_apps import McpAppCsp, McpAppUi
from lineup.sdk.mcp_grants import (
    DEVICES_CAPABILITY,
    MAX_DETAIL_CHARS,
    NETWORK_CAPABILITY,
    describe,
    union,
)


def test_a_declared_domain_or_permission_declares_the_capability_the_user_grants() -> None:
    def manifest(*uis: McpAppUi, requested: tuple[str, ...] = ()) -> Manifest:
        return Manifest.model_validate(
            {
                "format": "lineup.app.v1",
                "app_scope": "mcpnet",
                "version": "1.0.0",
                "requested_capabilities": list(requested),
                "entrypoints": [
                    {"id": f"e{n}", "kind": "surface", "mcp_app": ui.model_dump(mode="json")}
                    for n, ui in enumerate(uis)
                ],
            }
        )

    assert manifest(McpAppUi()).declared_capabilities == ()
    net = McpAppUi(csp=McpAppCsp(base_uri_domains=("https://base.example.com",)))
    assert manifest(net).declared_capabilities == (NETWORK_CAPABILITY,)
    both = manifest(
        net,
        McpAppUi(permissions=("camera",)),
        requested=("notification.show", NETWORK_CAPABILITY),
    )
    declared = ("notification.show", NETWORK_CAPABILITY, DEVICES_CAPABILITY)
    assert both.declared_capabilities == declared
    assert both.requested_capabilities == ("notification.show", NETWORK_CAPABILITY)  # as signed
    # Both are the catalog's: asked each time by default, rememberable, run by no provider.
    for name in (NETWORK_CAPABILITY, DEVICES_CAPABILITY):
        spec = caps.CATALOG[name]
        assert (spec.default_policy, spec.rememberable, spec.provider) == ("ask", True, "runtime")


def test_the_prompt_names_every_declared_origin_by_what_it_is_for() -> None:
    a = McpAppUi(
        csp=McpAppCsp(
            connect_domains=("https://api.example.com",),
            resource_domains=("https://*.cdn.example.net",),
        ),
        permissions=("clipboard_write",),
    )
    b = McpAppUi(
        csp=McpAppCsp(
            connect_domains=("https://api.example.com", "wss://live.example.com:8443"),
            frame_domains=("https://player.example.org",),
        ),
        permissions=("camera", "clipboard_write"),
    )
    both = union((a, b))
    assert describe(NETWORK_CAPABILITY, both).split("\n") == [
        "Connect to: https://api.example.com wss://live.example.com:8443",
        "Load images, fonts, styles and media from: https://*.cdn.example.net",
        "Embed pages of: https://player.example.org",
    ]
    assert describe(DEVICES_CAPABILITY, both) == "Devices: clipboard write, camera"
    local = McpAppUi(
        csp=McpAppCsp(
            connect_domains=("http://127.0.0.1:8080", "ws://app.localhost", "https://x.io")
        )
    )
    assert describe(NETWORK_CAPABILITY, local) == (
        "Connect to: http://127.0.0.1:8080 (this computer) ws://app.localhost (this computer)"
        " https://x.io"
    )
    many = McpAppUi(
        csp=McpAppCsp(
            **{
                kind: tuple(f"https://host{n}-{kind[:4]}.example-long-name.com" for n in range(32))
                for kind in ("connect_domains", "resource_domains", "frame_domains")
            }
        )
    )
    long = describe(NETWORK_CAPABILITY, many)
    assert len(long) <= MAX_DETAIL_CHARS and long.endswith(" … and more")
