"""A Surface's share of `agent_messages` (seed 004 §5.4, §6: "the same semantics, restricted"):
its app's inbox listed, subscribed to and acknowledged, for the Surface's own app and instance.

Theory of operation
-------------------
The hostbridge relays the bridge's `lineup/agent-messages/*` as `router.ui.surface.agent_messages`
naming the app whose Surface it is and its instance; focus confirms the instance is live and
that app's (`app_instance_not_found` otherwise). What a Surface reaches is exactly what the app's
own SDK does (`sdk/_agent_messages.py`): the app's conversation-level inbox and its instance's,
after the filter chain ran and the store persisted each message (rule 1). `list` reads both,
merged by seq; `acknowledge` removes one, or the display messages the bridge handed together
(idempotent: a second says it was not there, rule 3).

`subscribe` makes the hostbridge that asked a watcher of that instance's messages (one per
instance: the latest Surface's) and answers, with `include_pending`, what the inbox holds now.
Registered first, listed second: a message persisted between the two is both listed and pushed,
and the bridge hands each `message_id` once (rule 2). From then on each delivery the router
tells the app (`_deliveries`) is pushed to the watcher as well (`SurfaceNotifyEvent`), which
the hostbridge drops unless that Surface is still the instance's. The bridge applies the
Surface's filter (conversation, types), the SDK's step of the chain. Watchers are memory: a
restarted router has none, and the bridge subscribes again when its link comes back.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import Callable
from typing import Final

from lineup.actors.focus.messages import FindInstanceRequest, InstanceReply
from lineup.actors.kernel import AuditRecord, Bus, LineUpError
from lineup.actors.store.messages import InboxAckManyReply
from lineup.actors.store.messages import InboxAckManyRequest as StoreInboxAckMany
from lineup.hostbridge.messages import SurfaceNotifyEvent
from lineup.sdk import protocol as sdk
from lineup.sdk._protocol.agent_messages import message_of

from ._conversation import AppConversation
from .messages import SurfaceAgentMessagesReply, SurfaceAgentMessagesRequest

__all__ = ["SurfaceMessages"]

log = logging.getLogger("lineup.router")

ASK_TIMEOUT: Final = 3.0
TELL_TIMEOUT: Final = 2.0
MAX_WATCHED: Final = 256  # Surfaces subscribed at once (the oldest forgotten past this)


class SurfaceMessages:
    """The Surfaces' agent messages (the module's docstring)."""

    def __init__(
        self, bus: Bus, me: str, conversation: AppConversation, soon: Callable[..., None]
    ) -> None:
        self.bus = bus
        self._me = me
        self._conversation = conversation
        self._soon = soon
        # instance_id → (app_scope, surface_id, hostbridge): who is pushed that instance's.
        self._watchers: OrderedDict[str, tuple[str, str, str]] = OrderedDict()

    async def request(
        self, msg: SurfaceAgentMessagesRequest, peer: str
    ) -> SurfaceAgentMessagesReply:
        try:
            await self.bus.request(
                "focus",
                FindInstanceRequest(app_scope=msg.app_scope, instance_id=msg.instance_id),
                expect=InstanceReply,
                timeout=ASK_TIMEOUT,
                retry=True,
            )
            if msg.op == "acknowledge":
                return SurfaceAgentMessagesReply(acknowledged=await self._ack(msg, peer))
            if msg.op == "subscribe":
                self._watchers.pop(msg.instance_id, None)
                self._watchers[msg.instance_id] = (msg.app_scope, msg.surface_id, peer)
                while len(self._watchers) > MAX_WATCHED:
                    self._watchers.popitem(last=False)
                if not msg.include_pending:
                    return SurfaceAgentMessagesReply()
            return SurfaceAgentMessagesReply(messages=await self._list(msg))
        except LineUpError as exc:
            self.bus.audit(
                AuditRecord(
                    event="router.surface_agent_messages_refused",
                    actor=self._me,
                    peer=peer,
                    code=exc.code.value,
                    message_type=msg.TYPE,
                    subject_id=msg.instance_id,
                )
            )
            raise

    async def _list(self, msg: SurfaceAgentMessagesRequest) -> tuple[sdk.AgentMessage, ...]:
        found: list[sdk.AgentMessage] = []
        for instance_id in (None, msg.instance_id):
            reply = await self._conversation.inbox_list(
                msg.app_scope,
                sdk.InboxListRequest(
                    instance_id=instance_id, after_seq=msg.after_seq, limit=msg.limit
                ),
            )
            found += (message_of(delivery) for delivery in reply.deliveries)
        # Each inbox gave its `limit` oldest after the cursor: the merged `limit` oldest.
        return tuple(sorted(found, key=lambda m: m.seq)[: msg.limit])

    async def _ack(self, msg: SurfaceAgentMessagesRequest, peer: str) -> bool:
        """Remove the named messages from whichever of the Surface's two inboxes holds each;
        whether any was removed (False: acknowledged already, or never this app's). One of
        neither inbox (another app's or another instance's) is audited, as the app's own
        acknowledgement would be; one merely in the other inbox is not."""
        conversation_id = await self._conversation.session.conversation_or_none()
        if conversation_id is None:
            return False
        left = (msg.message_id,) if msg.message_id is not None else msg.message_ids
        removed = False
        foreign: set[str] = set(left)
        for instance_id in (None, msg.instance_id):
            if not left:
                break
            reply = await self.bus.request(
                "store",
                StoreInboxAckMany(
                    app_scope=msg.app_scope,
                    conversation_id=conversation_id,
                    instance_id=instance_id,
                    delivery_ids=left,
                ),
                expect=InboxAckManyReply,
                timeout=ASK_TIMEOUT,
            )
            removed = removed or bool(reply.acked)
            foreign &= set(reply.foreign)
            left = tuple(m for m in left if m not in set(reply.acked))
        for delivery_id in sorted(foreign):
            self.bus.audit(AuditRecord.scope_denied(self._me, peer, msg.TYPE, delivery_id))
        return removed

    def told(self, app_scope: str, deliveries: list[sdk.Delivery]) -> None:
        """Deliveries the router tells `app_scope` of: pushed to its watching Surfaces too,
        each the conversation's and its own instance's."""
        for instance_id, (scope, surface_id, hostbridge) in list(self._watchers.items()):
            if scope != app_scope:
                continue
            mine = tuple(
                message_of(d).model_dump(mode="json")
                for d in deliveries
                if d.instance_id in (None, instance_id)
            )
            if mine:
                event = SurfaceNotifyEvent(
                    instance_id=instance_id,
                    surface_id=surface_id,
                    kind="agent_messages",
                    params={"messages": list(mine)},
                )
                self._soon(self._tell, instance_id, hostbridge, event)

    async def _tell(self, instance_id: str, hostbridge: str, event: SurfaceNotifyEvent) -> None:
        if await self.bus.tell(hostbridge, event, timeout=TELL_TIMEOUT) is not None:
            self._watchers.pop(instance_id, None)  # gone: it subscribes again when back

    def ended(self, instance_id: str) -> None:
        """The instance ended: its Surface is told nothing more."""
        self._watchers.pop(instance_id, None)
