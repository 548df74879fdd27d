"""The delivery steps of the filter chain (seed 004 §5.3): each step, alone, stops a message
the others would deliver; a refusal has its code, a filter none."""

from __future__ import annotations

from typing import Any

import pytest

from lineup.actors.focus._inventory import subscription_permissions
from lineup.actors.focus.messages import InventoryReply
from lineup.actors.kernel import ErrorCode
from lineup.actors.router._envelope import RuntimeEnvelope, Scope, Sender, Target
from lineup.actors.router._subscriptions import (
    DEFAULT_SUBSCRIPTIONS,
    STEPS,
    AppFacts,
    Verdict,
    decide,
    facts_of,
)
from lineup.sdk.manifest import CONVERSATION_TEXTS, AgentSubscription, Manifest

CONVERSATION = "conv-1"
TEXT = "lineup.v1.text"
PATCH = "lineup.app.state.patch"


def envelope(
    app: str = "board",
    *,
    kind: str = TEXT,
    instance_id: str | None = None,
    target: str | None = None,
    conversation: str = CONVERSATION,
) -> RuntimeEnvelope:
    return RuntimeEnvelope(
        id="m-1",
        type=kind,
        timestamp="2026-01-01T00:00:00Z",
        sender=Sender(kind="agent", id="agent-1"),
        target=Target(kind="app", app_scope=target or app, instance_id=instance_id),
        scope=Scope(app_scope=app, conversation_id=conversation, instance_id=instance_id),
        payload={"markdown": "hi"},
    )


def board(**facts: Any) -> AppFacts:
    """An app that holds the conversation's texts (the `permission` step has tests of its own)."""
    facts.setdefault("permissions", frozenset({CONVERSATION_TEXTS}))
    return AppFacts(app_scope="board", installed=True, **facts)


def run(message: RuntimeEnvelope, app: AppFacts, **kw: Any) -> Verdict:
    return decide(message, app, conversation_id=CONVERSATION, **kw)


def test_a_text_for_an_app_that_declares_no_subscription_is_delivered_as_before() -> None:
    assert run(envelope(), board()).delivered
    assert (AgentSubscription(type=TEXT, scope="conversation"),) == DEFAULT_SUBSCRIPTIONS


def test_the_steps_run_in_the_seeds_order_and_are_named() -> None:
    assert STEPS == ("target", "app", "policy", "scope", "manifest", "permission")


def test_target_step_delivers_only_to_the_app_the_agent_named() -> None:
    assert run(envelope("other"), board()) == Verdict("target")
    assert run(envelope(target="other"), board()) == Verdict("target")


@pytest.mark.parametrize(
    ("facts", "code"),
    [
        ({"installed": False}, ErrorCode.APP_NOT_INSTALLED),
        ({"enabled": False}, ErrorCode.APP_DISABLED),
        ({"refusal": ErrorCode.APP_VERSION_MISMATCH}, ErrorCode.APP_VERSION_MISMATCH),
        ({"refusal": ErrorCode.APP_UNAVAILABLE}, ErrorCode.APP_UNAVAILABLE),
    ],
)
def test_app_step_refuses_an_app_that_cannot_take_it_with_its_code(
    facts: dict[str, Any], code: ErrorCode
) -> None:
    app = AppFacts(app_scope="board", **{"installed": True, **facts})
    assert run(envelope(), app) == Verdict("app", code)


def test_the_chat_is_never_refused_as_disabled() -> None:
    inventory = InventoryReply(
        revision="1", tools=(), disabled_tools=(), installed=("chat",), disabled_apps=("chat",)
    )
    assert run(envelope("chat"), facts_of(inventory, "chat")).delivered


def test_policy_step_hands_an_app_only_agent_message_types() -> None:
    subscribed = board(
        subscriptions=(AgentSubscription(type="lineup.v1.tool.call", scope="conversation"),)
    )
    assert run(envelope(kind="lineup.v1.tool.call"), subscribed) == Verdict("policy")


def test_scope_step_filters_another_conversation_and_none_before_a_login() -> None:
    assert run(envelope(conversation="conv-2"), board()) == Verdict("scope")
    assert decide(envelope(), board(), conversation_id=None) == Verdict("scope")


def test_manifest_step_intersects_type_and_scope() -> None:
    patches_only = board(subscriptions=(AgentSubscription(type=PATCH, scope="instance"),))
    # A manifest that declares subscriptions gets those only: no text.
    assert run(envelope(), patches_only) == Verdict("manifest")
    # An instance subscription covers a message for an instance, not the conversation's.
    assert run(envelope(kind=PATCH, instance_id="board:1"), patches_only).delivered
    assert run(envelope(kind=PATCH), patches_only) == Verdict("manifest")
    texts = board(subscriptions=(AgentSubscription(type=TEXT, scope="conversation"),))
    assert run(envelope(instance_id="board:1"), texts).delivered


def test_permission_step_needs_what_the_type_needs() -> None:
    needs = {(PATCH, "instance"): "board.read"}
    patches = board(subscriptions=(AgentSubscription(type=PATCH, scope="instance"),))
    patch = envelope(kind=PATCH, instance_id="board:1")
    assert run(patch, patches, needs=needs) == Verdict("permission")
    granted = board(subscriptions=patches.subscriptions, permissions=frozenset({"board.read"}))
    assert run(patch, granted, needs=needs).delivered


def test_the_conversations_texts_need_their_permission_an_instances_do_not() -> None:
    # Seed 004 §5.3: an app gets its own instance's messages; the Agent's conversation-wide
    # texts are another subscription, which the default subscriptions do not grant.
    bare = board(permissions=frozenset())
    assert run(envelope(), bare) == Verdict("permission")
    assert run(envelope(instance_id="board:1"), bare).delivered
    assert run(envelope(), board()).delivered


def _manifest(kind: str, *subscriptions: AgentSubscription) -> Manifest:
    return Manifest(
        format="lineup.app.v1",
        app_scope="board",
        version="1.0.0",
        kind=kind,
        agent_subscriptions=subscriptions,
    )


def test_who_holds_the_conversations_texts() -> None:
    texts = AgentSubscription(type=TEXT, scope="conversation")
    assert subscription_permissions("chat", _manifest("installed")) == (CONVERSATION_TEXTS,)
    assert subscription_permissions("board", _manifest("core")) == (CONVERSATION_TEXTS,)
    assert subscription_permissions("board", _manifest("installed", texts)) == (CONVERSATION_TEXTS,)
    # By default (no subscription declared), or asking for an instance's texts only: none.
    assert subscription_permissions("board", _manifest("bundled-reference")) == ()
    mine = AgentSubscription(type=TEXT, scope="instance")
    assert subscription_permissions("board", _manifest("installed", mine)) == ()


def test_a_filter_is_not_a_refusal() -> None:
    for verdict in (Verdict("target"), Verdict("policy"), Verdict("scope"), Verdict("manifest")):
        assert not verdict.delivered and verdict.code is None


def test_facts_of_the_inventory() -> None:
    inventory = InventoryReply(
        revision="1",
        tools=(),
        disabled_tools=(),
        installed=("chat", "board", "off"),
        agent_subscriptions={"board": (AgentSubscription(type=PATCH, scope="instance"),)},
        disabled_apps=("off",),
        refused_apps={"old": ErrorCode.APP_VERSION_MISMATCH.value},
        app_permissions={"board": (CONVERSATION_TEXTS,)},
    )
    assert facts_of(inventory, "board").subscriptions[0].type == PATCH
    assert facts_of(inventory, "board").permissions == {CONVERSATION_TEXTS}
    assert facts_of(inventory, "chat") == AppFacts(
        app_scope="chat", installed=True, permissions=frozenset({CONVERSATION_TEXTS})
    )
    assert facts_of(inventory, "off").permissions == frozenset()
    assert not facts_of(inventory, "off").enabled
    old = facts_of(inventory, "old")
    assert old.installed and old.refusal is ErrorCode.APP_VERSION_MISMATCH
    assert not facts_of(inventory, "gone").installed
