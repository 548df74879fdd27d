"""The user's grants of capabilities, as the capability gateway keeps them: the one a request
is decided with, the permissions page, and a change the user makes there.

The grants are the store's; the page (`gateway.ui.grants.list`) lists every installed app with
each capability its manifest declares (focus's registry), beside the user's grants and the
host's policy (`grant_views`). While focus cannot say (restarting), the page falls back on what
this gateway last saw: the registry as focus last listed it, and every app seen asking since
(`learn`). A change (`set`, or a prompt answered "allow always": `put`) is told to focus, which
reads the grants for its inventory, and to the Shells, which show the page.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from lineup.actors.focus.messages import (
    CapabilitiesChangedEvent,
    CapabilityContextReply,
    RegistryListRequest,
)
from lineup.actors.kernel import Bus
from lineup.actors.kernel.errors import ErrorCode, LineUpError
from lineup.actors.store import messages as store
from lineup.hostbridge.messages import GrantsChangedEvent
from lineup.sdk import capabilities as caps
from lineup.sdk import protocol as sdk

from ._capability_state import TRANSIENT, CapabilityConfig
from .messages import GrantSetRequest, GrantsListReply, GrantView

__all__ = ["Grants", "grant_views"]

log = logging.getLogger("lineup.gateway")

STORE_TIMEOUT: Final = 10.0
REGISTRY_LIST_TIMEOUT: Final = 2.0  # within the Shell's patience for the permissions page
MAX_KNOWN_APPS: Final = 1000  # apps whose declared capabilities the permissions page lists


class Grants:
    """The grants, for the gateway of `bus`; `tell` sends an event to a peer in the background."""

    def __init__(
        self, bus: Bus, config: CapabilityConfig, tell: Callable[[str, Any], None]
    ) -> None:
        self.bus = bus
        self.config = config
        self._tell = tell
        # scope -> (title, declared): the registry as focus last listed it, and every app seen
        # asking since; the permissions page falls back on it while focus cannot say.
        self._known: dict[str, tuple[str, tuple[str, ...]]] = {}

    def learn(self, context: CapabilityContextReply) -> None:
        """Remember an app seen asking: the permissions page lists it while focus cannot say."""
        if context.app_scope in self._known or len(self._known) < MAX_KNOWN_APPS:
            self._known[context.app_scope] = (context.app_title, context.declared)

    async def policy(self, scope: str, capability: str) -> caps.Policy | None:
        """The user's grant of `capability` to the app `scope`, if any (the store's)."""
        reply: store.CapabilityGrantListReply = await self.bus.request(
            "store",
            store.CapabilityGrantListRequest(app_scope=scope),
            expect=store.CapabilityGrantListReply,
            timeout=STORE_TIMEOUT,
            retry=True,
        )
        return next((g.policy for g in reply.grants if g.capability == capability), None)

    async def page(self) -> GrantsListReply:
        """The permissions page: every app in the registry with each capability its manifest
        declares, beside the user's grants and the host's policy (`grant_views`)."""
        reply: store.CapabilityGrantListReply = await self.bus.request(
            "store",
            store.CapabilityGrantListRequest(),
            expect=store.CapabilityGrantListReply,
            timeout=STORE_TIMEOUT,
            retry=True,
        )
        return GrantsListReply(
            grants=grant_views(reply.grants, await self._declared(), self.config)
        )

    async def _declared(self) -> dict[str, tuple[str, tuple[str, ...]]]:
        """Each installed app (enabled or not) with its title and declared capabilities, from
        focus's registry; while focus cannot say (restarting), what this gateway has seen."""
        try:
            listed: sdk.RegistryListReply = await self.bus.request(
                "focus",
                RegistryListRequest(),
                expect=sdk.RegistryListReply,
                timeout=REGISTRY_LIST_TIMEOUT,
                retry=True,
            )
        except LineUpError as exc:
            if exc.code not in TRANSIENT:
                raise
            log.info("gateway.registry_unlisted code=%s", exc.code.value)
            return dict(self._known)
        self._known = {
            app.app_scope: (app.title, app.capabilities) for app in listed.apps[:MAX_KNOWN_APPS]
        }
        return dict(self._known)

    async def set(self, msg: GrantSetRequest) -> GrantsListReply:
        if msg.capability not in caps.CATALOG:
            raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "not a capability of the catalog")
        if msg.policy == "ask":
            reply: store.CapabilityGrantDeleteReply = await self.bus.request(
                "store",
                store.CapabilityGrantDeleteRequest(
                    app_scope=msg.app_scope, capability=msg.capability
                ),
                expect=store.CapabilityGrantDeleteReply,
                timeout=STORE_TIMEOUT,
                retry=True,
            )
            if reply.changed:
                self._changed()
        else:
            await self.put(msg.app_scope, msg.capability, msg.policy)
        return await self.page()

    async def put(self, scope: str, capability: str, policy: caps.Policy) -> None:
        # An "allow" is remembered for a while; a block stands until the user lifts it.
        expires = time.time() + caps.DEFAULT_GRANT_TTL_S if policy == "allow" else None
        reply: store.CapabilityGrantPutReply = await self.bus.request(
            "store",
            store.CapabilityGrantPutRequest(
                app_scope=scope,
                capability=capability,
                policy="allow" if policy == "allow" else "deny",
                expires_at=expires,
            ),
            expect=store.CapabilityGrantPutReply,
            timeout=STORE_TIMEOUT,
            retry=True,
        )
        if reply.changed:
            self._changed()

    def _changed(self) -> None:
        # Fast paths: focus reads the grants when it starts, a Shell when it shows the page.
        self._tell("focus", CapabilitiesChangedEvent())
        self._tell("hostbridge", GrantsChangedEvent())


def grant_views(
    grants: Iterable[store.CapabilityGrantRow],
    apps: Mapping[str, tuple[str, tuple[str, ...]]],
    config: CapabilityConfig,
) -> tuple[GrantView, ...]:
    """The permissions page's rows, by app then capability: one for each capability an app
    declares (`apps`: scope -> (title, declared)), each the user granted (an app since removed
    included, so it can still be revoked), and each the host's policy names; only the
    catalog's. What applies is the user's grant, else the host's policy, else the default."""
    granted = {(g.app_scope, g.capability): g for g in grants}
    pairs = set(granted)
    pairs |= {(s, c) for s, (_, declared) in apps.items() for c in declared}
    pairs |= {(s, c) for s, per_cap in config.policy.items() for c in per_cap}
    views = []
    for scope, capability in sorted(pairs):
        spec = caps.CATALOG.get(capability)
        if spec is None:
            continue
        grant = granted.get((scope, capability))
        views.append(
            GrantView(
                app_scope=scope,
                app_title=apps.get(scope, (scope, ()))[0] or scope,
                capability=capability,
                policy=grant.policy
                if grant
                else config.host_policy(scope).get(capability, spec.default_policy),
                granted=grant is not None,
                granted_at=grant.granted_at if grant else None,
                expires_at=grant.expires_at if grant else None,
                supported=capability not in config.unsupported,
            )
        )
    return tuple(views)
