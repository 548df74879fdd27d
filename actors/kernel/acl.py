"""The ACL table: which channels may exist and which message types may cross them (DESIGN §2).

One table for the whole tree. `ACL[(sender_kind, receiver_kind)]` lists the message types the
sender may send to the receiver; a pattern ending in `.*` covers a whole prefix. A pair absent
from the table has no channel at all: the supervisor refuses to introduce it. The receiver checks
every incoming request and event against this table *before* decoding its body; replies are not
listed (they only answer a request the receiver itself made).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache, lru_cache
from typing import Final

from lineup.facts.scopes import CHAT

from .errors import ErrorCode
from .identity import RUNTIME_KINDS, ActorKind, Identity

__all__ = [
    "ACL",
    "AUDIT_APPEND",
    "DEV_APP_WATCHER",
    "RESERVED",
    "STORE_GRANTS",
    "channel_allowed",
    "message_allowed",
    "refusal",
]

K = ActorKind

_HEALTH: Final = "kernel.health.request"
_TO_SUPERVISOR: Final = frozenset({"supervisor.actor.ready", "supervisor.introduce.request"})

AUDIT_APPEND: Final = "store.audit.append"
DEV_APP_WATCHER: Final = ("focus.dev_app.list", "focus.dev_app.reload", "focus.dev_app.refused")
_DIAGNOSTICS: Final = ("store.audit.query", "store.stats.get")

# Who may send which store request, one block per actor (DESIGN §2, least privilege). The
# store's protocol is split by area (a tag's second segment: `store.tool_call.*`, …) and each
# area is written by the one actor that owns it. The outbox counts as two areas: its rows, which
# the router appends, and their delivery, which the transport settles. Another actor gets a read
# of an area only where it uses one. A store request listed nowhere is refused to every sender;
# tests/actors/kernel/test_acl.py checks each area's one writer against the store's protocol.
STORE_GRANTS: Final[Mapping[ActorKind, tuple[str, ...]]] = {
    # The router owns the call path: tool calls (a transition writes its receipt or result
    # outbox row in the same transaction), conversations and app inboxes, and the outbox rows
    # it appends or re-queues when an app retries a failed message. It reads the sync cursor
    # (`transport.session`) to learn which AppServer session it is in.
    K.ROUTER: (
        "store.tool_call.*",
        "store.interaction.*",  # a step carries its call's step: one transaction
        "store.deadline_operation.*",  # likewise: an operation's end and its call's step
        "store.app_session.*",  # opened and closed with their outbox rows
        "store.instance.list",  # read: at start, the calls of instances that ended meanwhile
        "store.conversation.*",
        "store.inbox.*",
        "store.outbox.append",
        "store.outbox.retry",
        "store.cursor.get",
        "store.dead_letter.*",  # an inbound item that failed twice is quarantined (issue 11)
    ),
    # Focus owns the apps' lifecycle: instances and the focus stack, the registry, session
    # data and inventory revisions.
    K.FOCUS: (
        "store.instance.*",
        "store.focus_stack.*",
        "store.registry.*",
        "store.session_data.*",
        "store.inventory.*",
        "store.capability_grant.list",  # a tool whose app cannot use a capability is left out
        "store.cursor.get",  # read: the current conversation, an app's launch is checked against
    ),
    # The transport owns the link: the sync cursor, and settling outbox rows with the
    # AppServer's answer (it reads the pending rows, marks each sent or failed). It never
    # creates a row: what it sends, the router wrote.
    K.TRANSPORT: (
        "store.cursor.*",
        "store.outbox.pending",
        "store.outbox.ack",
        "store.outbox.fail",
    ),
    # The gateway owns the artifacts: it writes their content under the data dir, then their
    # rows here, and reads them back for the apps and the Shell.
    # And the user's capability grants, which only its decisions and the permissions page make.
    K.GATEWAY: ("store.artifact.*", "store.capability_grant.*", "store.capability_request.*"),
    # The hostbridge faces the browser: it neither writes nor reads the store. What the user
    # does in the Shell reaches the store only through the actor that owns that area.
    K.HOSTBRIDGE: (),
}


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
    allow(K.FOCUS, K.SUPERVISOR, "supervisor.child.start", "supervisor.child.stop")
    allow(K.SUPERVISOR, K.FOCUS, "focus.app.failed")
    # The `lineup app` CLI's registry commands (the user at the terminal, on the owner-only
    # control socket): the supervisor introduces the command to focus, which owns the registry
    # and answers it directly. The supervisor relays nothing, so it asks focus nothing.
    allow(K.CLI, K.SUPERVISOR, "supervisor.introduce.request")
    allow(K.SUPERVISOR, K.CLI, "supervisor.channel.opened")
    allow(K.CLI, K.FOCUS, "focus.registry.install", "focus.registry.operate",
          "focus.registry.list")  # fmt: skip
    # `lineup run --dev-app`: the watcher (a development tool, the child `devwatch`) watches
    # the folders, focus reloads the app. Reserved to it by name (`RESERVED`): the reference
    # AppServer and the demo Agent are of the same kind.
    allow(K.DEV, K.FOCUS, *DEV_APP_WATCHER)
    allow(K.TRANSPORT, K.SUPERVISOR, "supervisor.runtime.state")  # for `lineup status`
    # The lifecycle's own part (restoring, stopping), for the Shell's badge.
    allow(K.SUPERVISOR, K.HOSTBRIDGE, "hostbridge.runtime.state")
    # An MCP App's log lines, from its Surface through the Shell, for `lineup logs` (issue 30).
    allow(K.HOSTBRIDGE, K.SUPERVISOR, "supervisor.app.view_log")
    allow(K.CLI, K.SUPERVISOR, "supervisor.status.request", _HEALTH)

    # Runtime actors may ask each other for health, which the kernel's `Actor` base answers.
    for sender in RUNTIME_KINDS:
        for receiver in RUNTIME_KINDS:
            if sender != receiver:
                allow(sender, receiver, _HEALTH)

    # The store, by area (DESIGN §2): each actor may send only the store requests it uses.
    for owner, types in STORE_GRANTS.items():
        allow(owner, K.STORE, *types)
    # The audit log belongs to the kernel: every bus sends its refusals there (the supervisor's
    # included), so a refusal is recorded where it happens, the hostbridge's too.
    for kind in (K.SUPERVISOR, *RUNTIME_KINDS - {K.STORE}):
        allow(kind, K.STORE, AUDIT_APPEND)
    # Reading the audit log and the store's counters changes nothing; any trusted actor (or a
    # probe of that kind) may read them, never the hostbridge, where the browser is.
    for kind in RUNTIME_KINDS - {K.STORE, K.HOSTBRIDGE}:
        allow(kind, K.STORE, *_DIAGNOSTICS)

    # Each actor's own protocol, by its declared prefix.
    allow(K.TRANSPORT, K.ROUTER, "router.inbound.*")
    allow(K.HOSTBRIDGE, K.TRANSPORT, "transport.ui.*")
    # Only the wake-up: a request back to the transport would close a request cycle with
    # `router.inbound.*`.
    allow(K.ROUTER, K.TRANSPORT, "transport.outbox.*")
    # The router asks focus to launch or find instances; focus only tells the router (the
    # inventory changed, an instance's life moved on), so the two never wait on each other.
    allow(K.ROUTER, K.FOCUS, "focus.*")
    allow(K.FOCUS, K.ROUTER, "router.inventory.changed", "router.instance.event",
          "router.instance.index", "router.instance.recovered")  # fmt: skip
    allow(K.HOSTBRIDGE, K.ROUTER, "router.ui.*")
    allow(K.HOSTBRIDGE, K.FOCUS, "focus.ui.*")
    allow(K.HOSTBRIDGE, K.GATEWAY, "gateway.ui.*")
    # The gateway asks focus whose an instance is (an artifact's owner), what a capability
    # request must be checked against, and, once the user confirmed the App Registry's request,
    # to carry out a registry operation; it tells focus that a grant changed. Focus never asks
    # the gateway, so no request cycle.
    allow(K.GATEWAY, K.FOCUS, "focus.instance.find", "focus.capability.context",
          "focus.capabilities.changed", "focus.registry.*")  # fmt: skip
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

# Requests that a kind's grant covers but that belong to named senders alone; any other sender
# of that kind is refused `permission_denied`. Only the chat speaks as the user (seed 003 §5.1:
# `send_text` is a system-level extension of Interact, not an app's): one row.
RESERVED: Final[Mapping[str, frozenset[str]]] = {
    "router.sdk.conversation.send_text": frozenset({f"miniapp:{CHAT}"}),
    # Only the App Registry reads the registry; it changes it only through capabilities.
    "focus.sdk.registry.list": frozenset({"miniapp:app-registry"}),
    **{tag: frozenset({"devwatch"}) for tag in DEV_APP_WATCHER},
}


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


def refusal(sender: Identity, receiver: ActorKind, message_type: str) -> ErrorCode | None:
    """Why `sender` may not send `message_type` to `receiver`: `acl_denied` (its kind has no
    grant for it) or `permission_denied` (a request reserved for other senders); None if it
    may."""
    if not message_allowed(sender.kind, receiver, message_type):
        return ErrorCode.ACL_DENIED
    owners = RESERVED.get(message_type)
    if owners is not None and sender.name not in owners:
        return ErrorCode.PERMISSION_DENIED
    return None


@lru_cache(maxsize=4096)
def _allowed(sender: ActorKind, receiver: ActorKind, message_type: str) -> bool:
    patterns = ACL.get((sender, receiver))
    if not patterns:
        return False
    if message_type in patterns:
        return True
    return any(p.endswith(".*") and message_type.startswith(p[:-1]) for p in patterns)
