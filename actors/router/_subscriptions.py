"""Which app receives an Agent's message: the delivery steps of the filter chain (seed 004 §5.3).

Theory of operation
-------------------
No I/O here. The chain's first links (`_envelope`: the wire's limits, version, type, shape,
conversation and Agent identity; `_inbound`: dedupe by id) have admitted the envelope; what is
left is the seed's intersection, one named step each, run in `STEPS` order, cheapest first:

    target      the Agent's target app_scope: the runtime delivers to the app the envelope
                names, never broadcasts (`scope` and `target` must both name it)
    app         the app is installed, enabled and runs on this host (rule 5 of §5.4)
    policy      the runtime's policy: only `AGENT_MESSAGE_TYPES` are ever handed to an app
    scope       the conversation is the one the session is in
    manifest    the manifest's `agent_subscriptions` cover the type at this scope (an
                `instance` subscription covers a message for an instance; a `conversation` one
                covers both); a manifest that declares none has `DEFAULT_SUBSCRIPTIONS`, what
                every app received before subscriptions were read
    permission  the app's current permissions hold what the type needs at this scope
                (`NEEDS_PERMISSION`): seed 004 §5.3 gives an app its own instance's messages
                and its tool calls; the Agent's conversation-wide texts (what the chat shows,
                not for one instance) are "another subscription", which an app holds only if
                its manifest asks for it and the runtime grants it (`AppFacts.permissions`,
                focus's `subscription_permissions`: the core apps, and an app whose manifest
                declares that subscription itself, not by default)

The SDK's subscribe filter is the last step, in the app's process (`sdk.AgentMessageFilter`),
after the message is persisted. `decide` returns a `Verdict`: delivered, filtered out by a step
(not an error for the Agent: the message is accepted and reaches no inbox), or refused with a
stable code (the `app` step: a message for an app that cannot take it is never silently
dropped). The caller audits both without content.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final, Literal

from lineup.actors.focus.messages import InventoryReply
from lineup.actors.kernel import ErrorCode
from lineup.facts.scopes import CHAT
from lineup.sdk import protocol as sdk
from lineup.sdk.manifest import CONVERSATION_TEXTS, AgentSubscription, SubscriptionScope

from ._envelope import RuntimeEnvelope

__all__ = [
    "DEFAULT_SUBSCRIPTIONS",
    "NEEDS_PERMISSION",
    "STEPS",
    "AppFacts",
    "FilteredOut",
    "Step",
    "Verdict",
    "decide",
    "facts_of",
]

Step = Literal["target", "app", "policy", "scope", "manifest", "permission"]
STEPS: Final[tuple[Step, ...]] = ("target", "app", "policy", "scope", "manifest", "permission")
TEXT: Final = "lineup.v1.text"
# A manifest that declares no subscription: the Agent's texts addressed to the app, as before
# subscriptions were read (every shipped manifest declares none).
DEFAULT_SUBSCRIPTIONS: Final = (AgentSubscription(type=TEXT, scope="conversation"),)
# The permission an app must hold now to be handed a type at a scope (the module's docstring).
# An instance's messages and the tool calls are the app's own: none needed.
NEEDS_PERMISSION: Final[Mapping[tuple[str, SubscriptionScope], str]] = {
    (TEXT, "conversation"): CONVERSATION_TEXTS,
}


@dataclass(frozen=True)
class AppFacts:
    """What the chain knows of the target app (focus's, through the inventory)."""

    app_scope: str
    installed: bool
    enabled: bool = True
    refusal: ErrorCode | None = None  # why it cannot run here (incompatible, unavailable)
    subscriptions: tuple[AgentSubscription, ...] = ()
    permissions: frozenset[str] = field(default_factory=frozenset)


@dataclass(frozen=True)
class Verdict:
    """The chain's answer: `step` None is delivered; else that step stopped it, refused with
    `code` or (None) filtered out."""

    step: Step | None = None
    code: ErrorCode | None = None

    @property
    def delivered(self) -> bool:
        return self.step is None


DELIVERED: Final = Verdict()


class FilteredOut(Exception):
    """Raised by the router for an envelope a step filtered out (`Verdict` without a code)."""

    def __init__(self, step: Step, message_id: str, message_type: str) -> None:
        super().__init__(step)
        self.step = step
        self.message_id = message_id
        self.message_type = message_type


def facts_of(inventory: InventoryReply, app_scope: str) -> AppFacts:
    """The target app as the inventory has it. The chat is always installed and enabled."""
    refused = inventory.refused_apps.get(app_scope)
    return AppFacts(
        app_scope=app_scope,
        installed=app_scope in inventory.installed or refused is not None,
        enabled=app_scope not in inventory.disabled_apps,
        refusal=ErrorCode(refused) if refused is not None else None,
        subscriptions=inventory.agent_subscriptions.get(app_scope, ()),
        permissions=frozenset(
            (CONVERSATION_TEXTS,)
            if app_scope == CHAT
            else inventory.app_permissions.get(app_scope, ())
        ),
    )


def decide(
    envelope: RuntimeEnvelope,
    app: AppFacts,
    *,
    conversation_id: str | None,
    needs: Mapping[tuple[str, SubscriptionScope], str] = NEEDS_PERMISSION,
) -> Verdict:
    """Run the delivery steps (the module's docstring) for `envelope` and its target `app`."""
    scope = envelope.scope
    if scope.app_scope != app.app_scope or envelope.target.app_scope != app.app_scope:
        return Verdict("target")
    if not app.installed:
        return Verdict("app", ErrorCode.APP_NOT_INSTALLED)
    if app.refusal is not None:
        return Verdict("app", app.refusal)
    if not app.enabled and app.app_scope != CHAT:
        return Verdict("app", ErrorCode.APP_DISABLED)
    if envelope.type not in sdk.AGENT_MESSAGE_TYPES:
        return Verdict("policy")
    if conversation_id is None or scope.conversation_id != conversation_id:
        return Verdict("scope")
    if not _subscribed(app.subscriptions or DEFAULT_SUBSCRIPTIONS, envelope):
        return Verdict("manifest")
    at: SubscriptionScope = "instance" if scope.instance_id is not None else "conversation"
    needed = needs.get((envelope.type, at))
    if needed is not None and needed not in app.permissions:
        return Verdict("permission")
    return DELIVERED


def _subscribed(subscriptions: tuple[AgentSubscription, ...], envelope: RuntimeEnvelope) -> bool:
    for_instance = envelope.scope.instance_id is not None
    return any(
        s.type == envelope.type and (s.scope == "conversation" or for_instance)
        for s in subscriptions
    )
