"""The ACL table (actors/kernel/acl.py): which channels exist, which types may cross them."""

from __future__ import annotations

import time
import tracemalloc
from itertools import product

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lineup.actors.kernel import ACL, RUNTIME_KINDS, ActorKind, channel_allowed, message_allowed

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


@pytest.mark.parametrize("other", [kind for kind in ALL_KINDS if kind is not K.SUPERVISOR])
def test_the_cli_has_a_channel_to_the_supervisor_only(other: ActorKind) -> None:
    assert channel_allowed(K.CLI, K.SUPERVISOR)
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


@pytest.mark.parametrize("tag", ["supervisor.status.request", HEALTH])
def test_the_cli_may_ask_the_supervisor_for_status_and_health(tag: str) -> None:
    assert message_allowed(K.CLI, K.SUPERVISOR, tag)


@pytest.mark.parametrize(
    "tag",
    [
        "supervisor.introduce.request",
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


def test_the_cli_patterns_are_exactly_status_and_health() -> None:
    assert ACL[(K.CLI, K.SUPERVISOR)] == {"supervisor.status.request", HEALTH}


def test_runtime_actors_may_use_the_store_but_the_store_never_writes_to_itself() -> None:
    for sender in RUNTIME_KINDS - {K.STORE}:
        assert message_allowed(sender, K.STORE, "store.outbox.append")
    assert not message_allowed(K.STORE, K.STORE, "store.outbox.append")
    assert message_allowed(K.SUPERVISOR, K.STORE, "store.audit.append")
    assert not message_allowed(K.SUPERVISOR, K.STORE, "store.outbox.append")


# ------------------------------------------------------------------ prefix patterns


@pytest.mark.parametrize(
    ("sender", "receiver", "tag"),
    [
        (K.ROUTER, K.STORE, "storex.y"),  # `store.*` must not cover `storex.*`
        (K.ROUTER, K.STORE, "store"),  # the bare prefix is not inside it
        (K.ROUTER, K.STORE, "xstore.y"),
        (K.ROUTER, K.STORE, "stor.e"),
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
        (K.ROUTER, K.STORE, "store.y"),
        (K.ROUTER, K.STORE, "store.outbox.append.request"),
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
