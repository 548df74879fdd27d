"""An MCP server's declared hosts (`lineup.sdk.mcp_network`): declaring asks the user for
`mcp.network` in the runtime's prompt, in the runtime's words; it never gives any network."""

from __future__ import annotations

from typing import Any

import pytest

from lineup.actors.kernel import ErrorCode
from lineup.sdk import capabilities as caps
from lineup.sdk.manifest import Manifest, ManifestInvalid, load_manifest, manifest_json
from lineup.sdk.mcp_network import NETWORK_CAPABILITY, describe


def _manifest(**mcp: Any) -> Manifest:
    return load_manifest(
        {
            "format": "lineup.app.v1",
            "app_scope": "weather",
            "version": "1.0.0",
            "kind": "mcp",
            "mcp": {"command": ["node", "index.js"], **mcp},
        }
    )


def test_declared_hosts_declare_the_capability_the_user_grants() -> None:
    hosts = ["api.example.com:443", "10.1.2.3:8080", "[2001:db8::1]:443", "API.Example.com:80"]
    declared = _manifest(network=hosts)
    assert declared.mcp is not None
    assert declared.mcp.network == (*hosts[:3], "api.example.com:80")
    assert declared.declared_capabilities == (NETWORK_CAPABILITY,)
    assert _manifest().declared_capabilities == ()
    # A server that declares none dumps as it did before the field was there.
    assert '"network"' not in manifest_json(_manifest())


@pytest.mark.parametrize(
    "host",
    [
        "api.example.com",
        "api.example.com:0",
        "api.example.com:65536",
        "https://api.example.com:443",
        "*.example.com:443",
        "api.example.com:443/path",
        "-bad.example.com:443",
        "",
    ],
)
def test_a_host_that_is_not_host_and_port_is_refused(host: str) -> None:
    with pytest.raises(ManifestInvalid) as refused:
        _manifest(network=["api.example.com:443", host])
    assert (refused.value.reason, refused.value.path) == ("manifest_malformed", "/mcp/network/1")


def test_the_prompt_asks_and_names_the_hosts_in_the_runtimes_words() -> None:
    spec = caps.CATALOG[NETWORK_CAPABILITY]
    assert (spec.default_policy, spec.provider, spec.input) == (
        "ask",
        "runtime",
        caps.McpServerNetwork,
    )
    asked = caps.decide(
        NETWORK_CAPABILITY,
        declared=(NETWORK_CAPABILITY,),
        enabled=True,
        live=True,
        foreground=False,
        unsupported=frozenset(),
        host_policy={},
        grant=None,
    )
    assert asked.action == "ask"
    undeclared = caps.decide(
        NETWORK_CAPABILITY,
        declared=(),
        enabled=True,
        live=True,
        foreground=False,
        unsupported=frozenset(),
        host_policy={},
        grant=None,
    )
    assert undeclared.code is ErrorCode.CAPABILITY_DENIED
    assert describe(("api.example.com:443", "10.1.2.3:8080")) == (
        "Connect to: api.example.com:443 10.1.2.3:8080"
    )
