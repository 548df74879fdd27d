"""The inventory focus publishes, without I/O: which tools the Agent may call now.

Theory of operation
-------------------
The inventory is the standard interactions (the runtime's own tools, always there) and the
tools of every usable, enabled app (`AppBook`) whose declared capabilities it may use now
(`CapabilityFacts`: the host's configuration and the user's grants), each placed in its app
(`app_scope`) and named by its one id (`lineup.sdk.manifest.tool_id`), whether its manifest
used LineUp's form or the seeds'. A tool only its app's Surface may call (`visibility`
`["app"]`, `ToolDescriptor.agent_visible`) is never in it: an Agent's call of one is refused
`tool_not_advertised` as any unadvertised tool's is. Its revision is the store's
(`store.inventory.revision.bump`, keyed by the content's digest): a new and higher one exactly
when the content changes, even back to a content seen before. `Inventory` says what the content
and its bump key are, and takes the revision the store answered (`revised`); the actor asks the
store and tells the router.
"""

from __future__ import annotations

import hashlib
import json

from lineup.facts.scopes import CHAT
from lineup.sdk import interactions
from lineup.sdk._protocol.agent_messages import TEXT
from lineup.sdk.manifest import CONVERSATION_TEXTS, CORE_KINDS, Manifest, ToolDescriptor

from ._app_book import AppBook
from ._capability_context import CapabilityFacts
from .messages import InventoryReply

__all__ = ["Inventory", "subscription_permissions"]


class Inventory:
    """The Agent's tools (the module's docstring) and their revision as the store last gave it."""

    def __init__(self, book: AppBook, capabilities: CapabilityFacts) -> None:
        self._book = book
        self.capabilities = capabilities
        self.revision = "0"

    def tools(self) -> list[ToolDescriptor]:
        return [
            *interactions.TOOLS,
            *(
                tool
                for scope, manifest in sorted(self._book.manifests().items())
                if self._book.enabled(scope)
                for tool in manifest.placed_tools()
                if tool.agent_visible and self.capabilities.visible(scope, manifest, tool)
            ),
        ]

    def bump_id(self) -> str:
        """The store's key for this content: the same content, the same key."""
        tools = [tool.published() for tool in self.tools()]
        return "inv-" + hashlib.sha256(json.dumps(tools, sort_keys=True).encode()).hexdigest()[:32]

    def revised(self, revision: int | str) -> bool:
        """Take the revision the store gave the content now; True if it is a new one."""
        changed = str(revision) != self.revision
        self.revision = str(revision)
        return changed

    def reply(self) -> InventoryReply:
        """The inventory as the router reads it: the tools, and what is left out and why."""
        manifests = self._book.manifests()
        disabled = tuple(
            tool.id
            for scope, manifest in manifests.items()
            if not self._book.enabled(scope)
            for tool in manifest.placed_tools()
            if tool.agent_visible
        )
        hidden = tuple(
            tool.id
            for manifest in self._book.hidden().values()
            for tool in manifest.placed_tools()
            if tool.agent_visible
        )
        return InventoryReply(
            revision=self.revision,
            tools=tuple(self.tools()),
            disabled_tools=disabled,
            installed=tuple(sorted({CHAT, *manifests})),
            hidden_tools=hidden,
            agent_subscriptions={s: m.agent_subscriptions for s, m in manifests.items()},
            disabled_apps=tuple(sorted(s for s in manifests if not self._book.enabled(s))),
            refused_apps={
                s: code.value for s in self._book.hidden() if (code := self._book.refusal(s))
            },
            app_permissions={
                s: held for s, m in manifests.items() if (held := subscription_permissions(s, m))
            },
        )


def subscription_permissions(scope: str, manifest: Manifest) -> tuple[str, ...]:
    """The delivery permissions `scope` holds (seed 004 §5.3): the Agent's conversation-wide
    texts for a core app, or for an app whose manifest asks for them itself (a declared
    `conversation` subscription to texts; the default subscriptions ask for nothing)."""
    core = scope == CHAT or manifest.kind in CORE_KINDS
    asked = any(s.type == TEXT and s.scope == "conversation" for s in manifest.agent_subscriptions)
    return (CONVERSATION_TEXTS,) if core or asked else ()
