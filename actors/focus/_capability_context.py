"""What focus knows for the capability gateway, and which tools the capabilities leave in the
inventory. No I/O but the store reads handed in.

The gateway decides a capability request against focus's facts (`context`): the app's title,
the capabilities its manifest declares, whether it is enabled, whether the instance is live and
in front. A tool whose `permissions` name a capability its app cannot use (undeclared, not
provided on this host, denied by the user's grant or the host's policy:
`lineup.sdk.capabilities.usable`) is left out of the inventory (seed 000 §9.1, last row); the
grants are read when focus starts and again whenever the gateway says one changed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.actors.store.messages import CapabilityGrantListReply
from lineup.sdk.capabilities import Policy, usable
from lineup.sdk.manifest import Manifest, ToolDescriptor
from lineup.sdk.mcp_apps import McpAppUi

from ._app_book import AppBook
from ._instances import Instances
from .messages import CapabilityContextReply, CapabilityContextRequest

__all__ = ["CapabilityFacts", "context_of"]


class CapabilityFacts:
    """The host's capability configuration and the user's grants, as focus filters tools."""

    def __init__(self, config: Mapping[str, Any] | None) -> None:
        conf = dict(config or {})
        self._unsupported = frozenset(str(c) for c in conf.get("unsupported") or ())
        self._policy: dict[str, dict[str, Policy]] = {
            str(scope): {str(c): v for c, v in dict(per_cap).items()}
            for scope, per_cap in dict(conf.get("policy") or {}).items()
        }
        self._grants: dict[tuple[str, str], Policy] = {}

    def read(self, reply: CapabilityGrantListReply) -> None:
        """Take the store's unexpired grants as they are now."""
        self._grants = {(g.app_scope, g.capability): g.policy for g in reply.grants}

    def granted(self, scope: str, manifest: Manifest) -> tuple[str, ...]:
        """The capabilities `scope` declares that it may use now (seed 004 §6.1
        `granted_permissions`): provided here, not denied by the host or the user."""
        return tuple(
            capability
            for capability in manifest.declared_capabilities
            if usable(
                capability,
                declared=manifest.declared_capabilities,
                unsupported=self._unsupported,
                host_policy=self._policy.get(scope, {}),
                grant=self._grants.get((scope, capability)),
            )
        )

    def visible(self, scope: str, manifest: Manifest, tool: ToolDescriptor) -> bool:
        """May `tool` of `scope` be in the inventory: every capability it declares usable?"""
        return all(
            usable(
                capability,
                declared=manifest.declared_capabilities,
                unsupported=self._unsupported,
                host_policy=self._policy.get(scope, {}),
                grant=self._grants.get((scope, capability)),
            )
            for capability in tool.permissions
        )


def context_of(
    msg: CapabilityContextRequest,
    *,
    instances: Instances,
    book: AppBook,
) -> CapabilityContextReply:
    """The facts of `msg.instance_id` for a capability request. Without `app_scope` (a
    Surface's request) the owner is whoever it is; with it, an instance of another app is
    `app_instance_not_found`, exactly as a missing one."""
    owner = instances.scope_of(msg.instance_id)
    if owner is None or (msg.app_scope is not None and owner != msg.app_scope):
        raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, msg.instance_id)
    manifest = book.manifest(owner)
    state = instances.state_of(msg.instance_id)
    return CapabilityContextReply(
        app_scope=owner,
        app_title=book.title(owner),
        instance_id=msg.instance_id,
        enabled=book.enabled(owner),
        live=msg.instance_id in instances.shown(),
        foreground=state == "foreground",
        declared=manifest.declared_capabilities if manifest is not None else (),
        surface_access=manifest.mcp_access if manifest is not None else McpAppUi(),
        mcp_network=manifest.mcp.network if manifest is not None and manifest.mcp else (),
    )
