"""The ACL table: which channels may exist and which message types may cross them (DESIGN §2).

One table for the whole tree. `ACL[(sender_kind, receiver_kind)]` lists the message types the
sender may send to the receiver; a pattern ending in `.*` covers a whole prefix. A pair absent
from the table has no channel at all: the supervisor refuses to introduce it. The receiver checks
every incoming request and event against this table *before* decoding its body; replies are not
listed (they only answer a request the receiver itself made).
"""

from __future__ import annotations

from functools import cache, lru_cache
from typing import Final

from .identity import RUNTIME_KINDS, ActorKind

__all__ = ["ACL", "channel_allowed", "message_allowed"]

K = ActorKind

_HEALTH: Final = "kernel.health.request"
_TO_SUPERVISOR: Final = frozenset({"supervisor.actor.ready", "supervisor.introduce.request"})


def _build() -> dict[tuple[ActorKind, ActorKind], frozenset[str]]:
    acl: dict[tuple[ActorKind, ActorKind], frozenset[str]] = {}

    def allow(sender: ActorKind, receiver: ActorKind, *types: str) -> None:
        acl[(sender, receiver)] = acl.get((sender, receiver), frozenset()) | frozenset(types)

    # The supervisor probes everyone and hands out channels; children report to it.
    for kind in (*RUNTIME_KINDS, K.MINIAPP, K.DEV):
        allow(K.SUPERVISOR, kind, _HEALTH, "supervisor.channel.opened")
        allow(kind, K.SUPERVISOR, *_TO_SUPERVISOR)
    # Only trusted actors may get a peer stopped for breaking the protocol.
    for kind in RUNTIME_KINDS:
        allow(kind, K.SUPERVISOR, "supervisor.peer.misbehaved")
    allow(K.SUPERVISOR, K.STORE, "store.audit.*")
    allow(K.FOCUS, K.SUPERVISOR, "supervisor.child.start", "supervisor.child.stop")
    allow(K.SUPERVISOR, K.FOCUS, "focus.app.failed")
    allow(K.CLI, K.SUPERVISOR, "supervisor.status.request", _HEALTH)

    # Runtime actors are trusted peers: health everywhere, the store's protocol for all.
    for sender in RUNTIME_KINDS:
        for receiver in RUNTIME_KINDS:
            if sender != receiver:
                allow(sender, receiver, _HEALTH)
        if sender != K.STORE:
            allow(sender, K.STORE, "store.*")

    # Each actor's own protocol, by its declared prefix.
    allow(K.TRANSPORT, K.ROUTER, "router.inbound.*")
    allow(K.HOSTBRIDGE, K.TRANSPORT, "transport.ui.*")
    allow(K.ROUTER, K.TRANSPORT, "transport.*")
    allow(K.ROUTER, K.FOCUS, "focus.*")
    allow(K.FOCUS, K.ROUTER, "router.*")
    allow(K.HOSTBRIDGE, K.ROUTER, "router.ui.*")
    allow(K.HOSTBRIDGE, K.FOCUS, "focus.ui.*")
    allow(K.HOSTBRIDGE, K.GATEWAY, "gateway.ui.*")
    allow(K.ROUTER, K.HOSTBRIDGE, "hostbridge.*")
    allow(K.FOCUS, K.HOSTBRIDGE, "hostbridge.*")
    allow(K.GATEWAY, K.HOSTBRIDGE, "hostbridge.*")
    allow(K.TRANSPORT, K.HOSTBRIDGE, "hostbridge.*")

    # MiniApps reach only the SDK-facing prefixes of router, focus and gateway. No channel to
    # the store, the transport, the hostbridge or another MiniApp exists at all.
    allow(K.MINIAPP, K.ROUTER, "router.sdk.*")
    allow(K.MINIAPP, K.FOCUS, "focus.sdk.*")
    allow(K.MINIAPP, K.GATEWAY, "gateway.sdk.*")
    for runtime in (K.ROUTER, K.FOCUS, K.GATEWAY):
        allow(runtime, K.MINIAPP, "miniapp.*")
    return acl


ACL: Final = _build()


@cache
def channel_allowed(a: ActorKind, b: ActorKind) -> bool:
    """May a direct channel between these kinds exist (in either direction)?"""
    return (a, b) in ACL or (b, a) in ACL


MAX_TYPE_LENGTH: Final = 200  # no real tag is longer; a longer one is refused unexamined


def message_allowed(sender: ActorKind, receiver: ActorKind, message_type: str) -> bool:
    # The length check comes before the (bounded) cache: the string is the peer's, possibly
    # a hostile one, and must neither pin memory in the cache nor cost more than O(length).
    if len(message_type) > MAX_TYPE_LENGTH:
        return False
    return _allowed(sender, receiver, message_type)


@lru_cache(maxsize=4096)
def _allowed(sender: ActorKind, receiver: ActorKind, message_type: str) -> bool:
    patterns = ACL.get((sender, receiver))
    if not patterns:
        return False
    if message_type in patterns:
        return True
    return any(p.endswith(".*") and message_type.startswith(p[:-1]) for p in patterns)
