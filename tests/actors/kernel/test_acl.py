"""The ACL table (actors/kernel/acl.py): which channels exist, which types may cross them."""

from __future__ import annotations

import graphlib
import time
import tracemalloc
from itertools import product
from types import ModuleType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lineup.actors.focus import messages as focus_messages
from lineup.actors.gateway import messages as gateway_messages
from lineup.actors.kernel import (
    ACL,
    RUNTIME_KINDS,
    ActorKind,
    ErrorCode,
    Identity,
    Message,
    channel_allowed,
    control,
    message_allowed,
)
from lineup.actors.kernel.acl import DEV_APP_WATCHER, RESERVED, refusal
from lineup.actors.router import messages as router_messages
from lineup.actors.store import messages as store_messages
from lineup.actors.transport import messages as transport_messages
from lineup.hostbridge import messages as hostbridge_messages
from lineup.sdk import protocol as sdk_protocol

K = ActorKind
ALL_KINDS = list(ActorKind)
SDK_FACING = {K.ROUTER: "router.sdk.", K.FOCUS: "focus.sdk.", K.GATEWAY: "gateway.sdk."}
HEALTH = "kernel.health.request"

# Hostile type strings must be refused within this budget each (the honest ones take µs).
FAST_ENOUGH_S = 0.25


# ---------------------------------------------------------------------------- channels


@pytest.mark.parametrize("other", [K.STORE, K.TRANSPORT, K.HOSTBRIDGE, K.MINIAPP, K.CLI])
def test_a_miniapp_has_no_channel_to_the_store_transport_hostbridge_or_another_miniapp(
    other: ActorKind,
) -> None:
    assert not channel_allowed(K.MINIAPP, other)
    assert not channel_allowed(other, K.MINIAPP)
    assert (K.MINIAPP, other) not in ACL
    assert (other, K.MINIAPP) not in ACL


@pytest.mark.parametrize("other", [K.SUPERVISOR, K.ROUTER, K.FOCUS, K.GATEWAY])
def test_a_miniapp_has_a_channel_to_the_supervisor_and_the_sdk_facing_actors(
    other: ActorKind,
) -> None:
    assert channel_allowed(K.MINIAPP, other)


@pytest.mark.parametrize(
    "other", [kind for kind in ALL_KINDS if kind not in (K.SUPERVISOR, K.FOCUS)]
)
def test_the_cli_has_a_channel_to_the_supervisor_and_to_focus_only(other: ActorKind) -> None:
    # Focus's is opened by the supervisor for one registry command (an introduction).
    assert channel_allowed(K.CLI, K.SUPERVISOR)
    assert channel_allowed(K.CLI, K.FOCUS)
    assert not channel_allowed(K.CLI, other)


@pytest.mark.parametrize(("a", "b"), list(product(ALL_KINDS, ALL_KINDS)))
def test_channels_are_symmetric_and_match_the_table(a: ActorKind, b: ActorKind) -> None:
    assert channel_allowed(a, b) == channel_allowed(b, a)
    assert channel_allowed(a, b) == ((a, b) in ACL or (b, a) in ACL)


@pytest.mark.parametrize(("a", "b"), list(product(ALL_KINDS, ALL_KINDS)))
def test_no_pair_without_a_channel_may_exchange_any_message(a: ActorKind, b: ActorKind) -> None:
    if not channel_allowed(a, b):
        for tag in (HEALTH, "store.audit.record", "router.sdk.kerneltest_echo", "x"):
            assert not message_allowed(a, b, tag)


# ---------------------------------------------------------------------------- messages


@pytest.mark.parametrize("receiver", [K.ROUTER, K.FOCUS, K.GATEWAY])
def test_a_miniapp_may_send_only_the_sdk_prefix_of_each_sdk_facing_actor(
    receiver: ActorKind,
) -> None:
    allowed = SDK_FACING[receiver]
    assert message_allowed(K.MINIAPP, receiver, allowed + "call")
    assert message_allowed(K.MINIAPP, receiver, allowed + "tool.call.request")
    for prefix in SDK_FACING.values():
        if prefix != allowed:
            assert not message_allowed(K.MINIAPP, receiver, prefix + "call")
    for tag in (
        HEALTH,
        f"{receiver.value}.ui.open",
        f"{receiver.value}.inbound.message",
        f"{receiver.value}.internal.reset",
        "store.outbox.append",
        "supervisor.status.request",
        "supervisor.channel.opened",
    ):
        assert not message_allowed(K.MINIAPP, receiver, tag), tag


def test_the_acl_table_lets_a_miniapp_send_only_sdk_prefixes_to_runtime_actors() -> None:
    for (sender, receiver), patterns in ACL.items():
        if sender is K.MINIAPP and receiver is not K.SUPERVISOR:
            assert patterns == {SDK_FACING[receiver] + "*"}


def test_a_miniapp_may_only_report_to_the_supervisor_never_command_it() -> None:
    assert message_allowed(K.MINIAPP, K.SUPERVISOR, "supervisor.actor.ready")
    for tag in (
        "supervisor.status.request",
        "supervisor.channel.opened",
        HEALTH,
        "supervisor.stop.request",
    ):
        assert not message_allowed(K.MINIAPP, K.SUPERVISOR, tag)


@pytest.mark.parametrize(
    "tag", ["supervisor.status.request", HEALTH, "supervisor.introduce.request"]
)
def test_the_cli_may_ask_the_supervisor_for_status_health_and_an_introduction(tag: str) -> None:
    assert message_allowed(K.CLI, K.SUPERVISOR, tag)


@pytest.mark.parametrize(
    "tag",
    [
        "supervisor.actor.ready",
        "supervisor.peer.misbehaved",
        "supervisor.channel.opened",
        "supervisor.stop.request",
        "supervisor.status",
        "supervisor.status.request.extra",
        "store.audit.append",
        "kernel.health",
    ],
)
def test_the_cli_may_ask_the_supervisor_for_nothing_else(tag: str) -> None:
    assert not message_allowed(K.CLI, K.SUPERVISOR, tag)


def test_the_cli_patterns_are_exactly_status_health_an_introduction_and_the_registry() -> None:
    assert ACL[(K.CLI, K.SUPERVISOR)] == {
        "supervisor.status.request",
        HEALTH,
        "supervisor.introduce.request",
    }
    assert ACL[(K.CLI, K.FOCUS)] == {
        "focus.registry.install",
        "focus.registry.operate",
        "focus.registry.list",
    }
    assert (K.FOCUS, K.CLI) not in ACL  # focus answers; it never asks the command anything


@pytest.mark.parametrize(
    "tag",
    [
        "focus.registry.inspect",
        "focus.registry.*",
        "focus.sdk.registry.list",
        "focus.instance.find",
        "focus.ui.intent",
        "focus.dev_app.reload",
        HEALTH,
    ],
)
def test_the_cli_may_ask_focus_for_the_registry_commands_and_nothing_else(tag: str) -> None:
    assert not message_allowed(K.CLI, K.FOCUS, tag)


def test_the_supervisor_tells_the_hostbridge_the_lifecycle_and_nothing_else() -> None:
    assert ACL[(K.SUPERVISOR, K.HOSTBRIDGE)] == {
        HEALTH,
        "supervisor.channel.opened",
        "hostbridge.runtime.state",
    }


# ------------------------------------------------------------------ the store, by area

# Who owns each area of the store's protocol: the one actor that may write it (DESIGN §2,
# issue 10). An area is a set of tag patterns; a pattern ending in "." covers a prefix. The
# outbox is two areas: its rows, which the router appends (and re-queues on an app's retry),
# and their delivery, which the transport settles with the AppServer's answer.
AREAS: dict[str, tuple[ActorKind, tuple[str, ...]]] = {
    "tool calls": (K.ROUTER, ("store.tool_call.",)),
    "interactions": (K.ROUTER, ("store.interaction.",)),
    "app sub-sessions": (K.ROUTER, ("store.app_session.",)),
    "conversations": (K.ROUTER, ("store.conversation.",)),
    "app inboxes": (K.ROUTER, ("store.inbox.",)),
    "outbox rows": (K.ROUTER, ("store.outbox.append", "store.outbox.retry")),
    "outbox delivery": (
        K.TRANSPORT,
        ("store.outbox.pending", "store.outbox.ack", "store.outbox.fail"),
    ),
    "cursors": (K.TRANSPORT, ("store.cursor.",)),
    "instances": (K.FOCUS, ("store.instance.",)),
    "focus stack": (K.FOCUS, ("store.focus_stack.",)),
    "registry": (K.FOCUS, ("store.registry.",)),
    "session data": (K.FOCUS, ("store.session_data.",)),
    "inventory revisions": (K.FOCUS, ("store.inventory.",)),
    "dead letters": (K.ROUTER, ("store.dead_letter.",)),
    "artifacts": (K.GATEWAY, ("store.artifact.",)),
    "capability grants": (K.GATEWAY, ("store.capability_grant.",)),
    "capability requests": (K.GATEWAY, ("store.capability_request.",)),
    "deadline operations": (K.ROUTER, ("store.deadline_operation.",)),
}
# The requests that change nothing, listed by hand (not read from the ACL), so that this file is
# a second opinion on which requests write. Every other store request writes.
READS = frozenset(
    {
        "store.tool_call.get",
        "store.tool_call.list",
        "store.deadline_operation.list",
        "store.interaction.get",
        "store.interaction.list",
        "store.app_session.get",
        "store.app_session.list",
        "store.conversation.history",
        "store.conversation.message",
        "store.inbox.list",
        "store.outbox.pending",
        "store.cursor.get",
        "store.instance.list",
        "store.focus_stack.get",
        "store.registry.list",
        "store.session_data.get",
        "store.inventory.revision.get",
        "store.dead_letter.list",
        "store.dead_letter.summary",
        "store.artifact.get",
        "store.capability_request.list",
        "store.artifact.list",
        "store.artifact.usage",
        "store.capability_grant.list",
    }
)
# Reads of an area granted beyond its owner, each because that actor uses it.
READ_BY: dict[str, set[ActorKind]] = {
    # The AppServer session a call arrived in; the conversation an app's launch names.
    "store.cursor.get": {K.ROUTER, K.FOCUS},
    "store.instance.list": {K.ROUTER},  # at start: the calls of instances that ended meanwhile
    "store.capability_grant.list": {K.FOCUS},  # a tool whose app cannot use one leaves
}
# The kernel's, not an area's: every bus writes the refusals it makes, and any trusted actor
# may read the audit log and the store's counters back; never the hostbridge.
AUDIT_APPEND = "store.audit.append"
DIAGNOSTICS = frozenset({"store.audit.query", "store.stats.get"})
DIAGNOSTIC_READERS = {K.ROUTER, K.FOCUS, K.TRANSPORT, K.GATEWAY}


def _requests(module: ModuleType) -> frozenset[str]:
    """Every request tag a protocol module exports. A class is a request when its name says so
    (CONVENTIONS: `<Noun><Verb>Request` / `…Reply` / `…Event`): a tag alone cannot tell
    (`router.inbound.envelopes` is a request, `router.inbound.outbox_settled` an event)."""
    classes = (getattr(module, name) for name in module.__all__)
    return frozenset(
        cls.TYPE
        for cls in classes
        if isinstance(cls, type) and issubclass(cls, Message) and cls.__name__.endswith("Request")
    )


STORE_REQUESTS = _requests(store_messages)
AREA_REQUESTS = STORE_REQUESTS - DIAGNOSTICS - {AUDIT_APPEND}
WRITES = AREA_REQUESTS - READS


def _covers(pattern: str, tag: str) -> bool:
    return tag.startswith(pattern) if pattern.endswith(".") else tag == pattern


def area_of(tag: str) -> str:
    [area] = [
        name for name, (_, patterns) in AREAS.items() if any(_covers(p, tag) for p in patterns)
    ]
    return area


def senders(receiver: ActorKind, tag: str) -> set[ActorKind]:
    return {kind for kind in ALL_KINDS if message_allowed(kind, receiver, tag)}


def test_the_store_protocol_is_what_this_file_expects() -> None:
    # Guards the lists above: a new store request must be placed in an area here (and granted
    # in the ACL) before it can be used, a read must still exist.
    assert {AUDIT_APPEND, *DIAGNOSTICS, *READS} <= STORE_REQUESTS
    assert "store.tool_call.step" in WRITES


@pytest.mark.parametrize("tag", sorted(AREA_REQUESTS))
def test_every_store_request_lies_in_exactly_one_area(tag: str) -> None:
    assert area_of(tag) in AREAS


@pytest.mark.parametrize("tag", sorted(WRITES))
def test_every_store_write_may_be_sent_by_its_areas_owner_and_nobody_else(tag: str) -> None:
    owner, _ = AREAS[area_of(tag)]
    assert senders(K.STORE, tag) == {owner}


@pytest.mark.parametrize("area", list(AREAS))
def test_every_store_area_has_exactly_one_writing_owner(area: str) -> None:
    writes = [tag for tag in WRITES if area_of(tag) == area]
    assert writes, f"{area} has no write request"
    writers = set().union(*(senders(K.STORE, tag) for tag in writes))
    assert writers == {AREAS[area][0]}


@pytest.mark.parametrize("tag", sorted(READS))
def test_a_store_read_is_granted_to_its_owner_and_only_where_else_it_is_used(tag: str) -> None:
    owner, _ = AREAS[area_of(tag)]
    assert senders(K.STORE, tag) == {owner} | READ_BY.get(tag, set())


@pytest.mark.parametrize("tag", sorted(STORE_REQUESTS))
def test_the_hostbridge_may_send_the_store_only_the_kernels_audit_rows(tag: str) -> None:
    assert message_allowed(K.HOSTBRIDGE, K.STORE, tag) == (tag == AUDIT_APPEND)


def test_every_bus_may_write_its_audit_rows_and_only_trusted_actors_read_them() -> None:
    assert senders(K.STORE, AUDIT_APPEND) == (RUNTIME_KINDS - {K.STORE}) | {K.SUPERVISOR}
    for tag in DIAGNOSTICS:
        assert senders(K.STORE, tag) == DIAGNOSTIC_READERS


def test_the_store_sends_itself_nothing() -> None:
    assert (K.STORE, K.STORE) not in ACL


# Sorted: the ACL's order is a hash's, and every pytest-xdist worker must collect the same.
STORE_GRANTS: list[tuple[ActorKind, ActorKind]] = sorted(
    (pair for pair in ACL if pair[1] is K.STORE), key=lambda pair: pair[0].value
)


@pytest.mark.parametrize(("sender", "receiver"), STORE_GRANTS)
def test_every_store_grant_names_requests_the_store_serves(
    sender: ActorKind, receiver: ActorKind
) -> None:
    # A grant that covers nothing is a leftover (or a typo that grants nothing).
    for pattern in ACL[(sender, receiver)] - {HEALTH, "supervisor.channel.opened"}:
        prefix = pattern.removesuffix("*")
        assert any(_covers(prefix, tag) for tag in STORE_REQUESTS), pattern


# --------------------------------------------------------------- the request graph

# The protocols of the runtime actors and the SDK: the messages that may cross a runtime channel.
# (Tests define their own messages under real prefixes; they are not the runtime's.)
PROTOCOLS = (
    control,
    router_messages,
    focus_messages,
    transport_messages,
    gateway_messages,
    store_messages,
    hostbridge_messages,
    sdk_protocol,
)
# Health is answered by the kernel's `Actor` base, never by an actor's own handlers, so a health
# request never waits on anything and cannot close a cycle.
RUNTIME_REQUESTS = frozenset().union(*map(_requests, PROTOCOLS)) - {HEALTH}

# An edge is a pair of runtime actors where the ACL lets the sender send at least one request
# (a class named `…Request`, see `_requests`) to the receiver; events (`…Event`, sent with
# `tell`) wait on nothing and make no edge. Counting by class errs towards finding a cycle.
# (Router and focus asked each other until issue 10; focus now only tells the router.)


def request_graph() -> dict[ActorKind, set[ActorKind]]:
    """sender → the runtime actors it may send at least one request to, per the ACL."""
    return {
        sender: {
            receiver
            for receiver in RUNTIME_KINDS - {sender}
            if any(message_allowed(sender, receiver, tag) for tag in RUNTIME_REQUESTS)
        }
        for sender in RUNTIME_KINDS
    }


def find_cycle(graph: dict[ActorKind, set[ActorKind]]) -> tuple[str, ...] | None:
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as exc:
        return tuple(str(kind) for kind in exc.args[1])
    return None


def test_requests_and_events_are_told_apart_by_their_class() -> None:
    assert {"router.inbound.envelopes", "focus.instance.launch"} <= RUNTIME_REQUESTS
    assert "router.inbound.outbox_settled" not in RUNTIME_REQUESTS
    assert "router.inventory.changed" not in RUNTIME_REQUESTS
    assert "router.instance.event" not in RUNTIME_REQUESTS
    assert "transport.outbox.wake" not in RUNTIME_REQUESTS


def test_the_request_graph_between_runtime_actors_has_no_cycle() -> None:
    assert find_cycle(request_graph()) is None


def test_focus_only_tells_the_router() -> None:
    graph = request_graph()
    assert K.FOCUS in graph[K.ROUTER]  # the router asks focus to launch or find instances
    assert K.ROUTER not in graph[K.FOCUS]
    assert message_allowed(K.FOCUS, K.ROUTER, "router.instance.event")
    assert not message_allowed(K.FOCUS, K.ROUTER, "router.inbound.envelopes")


def test_the_cycle_check_finds_a_cycle() -> None:
    assert find_cycle({K.ROUTER: {K.TRANSPORT}, K.TRANSPORT: {K.ROUTER}}) is not None
    assert find_cycle({K.ROUTER: {K.TRANSPORT}, K.TRANSPORT: set()}) is None


# ------------------------------------------------------------------ prefix patterns


@pytest.mark.parametrize(
    ("sender", "receiver", "tag"),
    [
        (K.ROUTER, K.STORE, "store.tool_callx.y"),  # `store.tool_call.*` must not cover it
        (K.ROUTER, K.STORE, "store.tool_call"),  # the bare prefix is not inside it
        (K.ROUTER, K.STORE, "xstore.tool_call.y"),
        (K.ROUTER, K.STORE, "store.tool.call.y"),
        (K.ROUTER, K.STORE, "store.outbox.append.extra"),  # an exact tag covers nothing below
        (K.MINIAPP, K.ROUTER, "router.sdkx.call"),
        (K.MINIAPP, K.ROUTER, "router.sdk"),
        (K.MINIAPP, K.ROUTER, "router.sd.k"),
        (K.MINIAPP, K.ROUTER, "router.sdk_call"),
        (K.MINIAPP, K.ROUTER, "xrouter.sdk.call"),
        (K.MINIAPP, K.ROUTER, "ROUTER.SDK.CALL"),
        (K.TRANSPORT, K.ROUTER, "router.inboundx.message"),
        (K.SUPERVISOR, K.STORE, "store.auditx.append"),
    ],
)
def test_prefix_patterns_match_only_on_dot_boundaries(
    sender: ActorKind, receiver: ActorKind, tag: str
) -> None:
    assert not message_allowed(sender, receiver, tag)


@pytest.mark.parametrize(
    ("sender", "receiver", "tag"),
    [
        (K.ROUTER, K.STORE, "store.tool_call.y"),
        (K.ROUTER, K.STORE, "store.tool_call.step.request"),
        (K.MINIAPP, K.ROUTER, "router.sdk.call"),
        (K.MINIAPP, K.ROUTER, "router.sdk.a.b.c.d"),
        (K.SUPERVISOR, K.STORE, "store.audit.append"),
    ],
)
def test_prefix_patterns_cover_everything_below_their_prefix(
    sender: ActorKind, receiver: ActorKind, tag: str
) -> None:
    assert message_allowed(sender, receiver, tag)


@settings(deadline=None)
@given(suffix=st.text(alphabet="ab.*", max_size=12))
def test_a_miniapp_is_allowed_a_type_only_if_it_lies_under_router_sdk(suffix: str) -> None:
    tag = "router.sd" + suffix
    assert message_allowed(K.MINIAPP, K.ROUTER, tag) == tag.startswith("router.sdk.")


# --------------------------------------------------------------- hostile type strings

HOSTILE = {
    "empty": "",
    "dot": ".",
    "star": "*",
    "dot-star": ".*",
    "nul": "router\x00sdk.call",
    "newline": "router.sdk\n.call",
    "unicode-dot": "router\u2024sdk.call",
    "lookalike": "r\u043euter.sdk.call",  # a Cyrillic letter o
    "surrogate": "router.\udcffsdk.call",
    "many-dots": "." * 1000,
    "star-path": "*.*.*.*",
}


@pytest.mark.parametrize("tag", list(HOSTILE.values()), ids=list(HOSTILE))
@pytest.mark.parametrize("receiver", [K.ROUTER, K.STORE, K.SUPERVISOR])
def test_weird_type_strings_are_refused(receiver: ActorKind, tag: str) -> None:
    assert message_allowed(K.MINIAPP, receiver, tag) is False


@pytest.mark.parametrize(
    "tag",
    ["." * 100_000, "a." * 50_000, "router.sdkx" + "." * 100_000, "x" * 1_000_000],
    ids=["dots", "short-segments", "dots-after-a-near-miss", "one-long-segment"],
)
def test_a_huge_hostile_type_string_is_refused_fast(tag: str) -> None:
    # A frame may be 1 MiB, so a peer can send a type string that long; the check runs on the
    # reader's task and must not stall the actor.
    started = time.perf_counter()
    assert message_allowed(K.MINIAPP, K.ROUTER, tag) is False
    assert time.perf_counter() - started < FAST_ENOUGH_S


def test_the_decision_cache_stops_growing_however_many_distinct_types_arrive() -> None:
    def refuse_distinct(start: int, count: int) -> None:
        for n in range(start, start + count):
            assert not message_allowed(K.MINIAPP, K.ROUTER, f"hostile.{n:08d}." + "t" * 100)

    tracemalloc.start()
    try:
        refuse_distinct(0, 10_000)  # fill any bounded cache
        before, _ = tracemalloc.get_traced_memory()
        refuse_distinct(10_000, 20_000)  # an unbounded one would keep ~5 MiB more
        after, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert after - before < 1024 * 1024


def test_hostile_type_strings_do_not_pin_memory_in_the_decision_cache() -> None:
    # 32 distinct 512 KiB type strings (each fits in a frame): a cache keyed on the raw string
    # would keep 16 MiB alive long after the frames are gone.
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        for n in range(32):
            tag = f"{n:04d}" + "x" * (512 * 1024)
            assert not message_allowed(K.MINIAPP, K.ROUTER, tag)
            del tag
        after, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert after - before < 2 * 1024 * 1024


def test_a_reserved_request_is_its_owners_alone_and_another_sender_of_the_kind_is_refused() -> None:
    send_text = "router.sdk.conversation.send_text"
    registry = "focus.sdk.registry.list"
    # Only the chat speaks as the user, only the App Registry reads the registry, and only the
    # dev-app watcher has focus reload a development app (the reference AppServer and the
    # demo Agent are development tools of the same kind).
    assert set(RESERVED) == {send_text, registry, *DEV_APP_WATCHER}
    for tag in DEV_APP_WATCHER:
        assert refusal(Identity(K.DEV, "devwatch"), K.FOCUS, tag) is None
        assert refusal(Identity(K.DEV, "devserver"), K.FOCUS, tag) is ErrorCode.PERMISSION_DENIED
        assert refusal(Identity(K.SUPERVISOR, "supervisor"), K.FOCUS, tag) is ErrorCode.ACL_DENIED
    assert refusal(Identity(K.MINIAPP, "miniapp:app-registry"), K.FOCUS, registry) is None
    assert refusal(Identity(K.MINIAPP, "miniapp:chat"), K.FOCUS, registry) is (
        ErrorCode.PERMISSION_DENIED
    )
    chat = Identity(K.MINIAPP, "miniapp:chat")
    other = Identity(K.MINIAPP, "miniapp:probe")
    assert refusal(chat, K.ROUTER, send_text) is None
    assert refusal(other, K.ROUTER, send_text) is ErrorCode.PERMISSION_DENIED
    assert refusal(other, K.ROUTER, "router.sdk.tool.complete") is None
    assert refusal(chat, K.STORE, "store.tool_call.step") is ErrorCode.ACL_DENIED
