"""`app.agent_messages`: the Agent's messages for this app, listed, subscribed to and
acknowledged (seed 004 §5.4, `AgentMessageAPI`), built on the app's inbox.

Theory of operation
-------------------
The runtime has already run the filter chain and persisted each message in the app's inbox
before the app hears of it (rule 1). The host hands every delivery it is told of to
`dispatch`, as it hands it to `on_delivery`; `dispatch` turns it into an `AgentMessage` and
gives it to each subscription whose filter matches (the chain's SDK step). A message a
subscription has taken is never handed to it again in this process, however often the runtime
tells it (rule 2: at least once in, once out). A display message (the Agent's text) is
acknowledged once every matching handler took it; any other stays until `acknowledge` (rule 3).
A handler that raises leaves the message in the inbox, and the host offers it again
(`handler_failed`).

Nothing is lost across a crash (rule 4): what was not acknowledged is still in the inbox, and
a new process reads it with `list()` or `subscribe(..., include_pending=True)`.

The app's inbox here is the conversation-level one and the process's own instance's; a
message for another instance of the app reaches `dispatch` when the runtime tells of it.
"""

from __future__ import annotations

import inspect
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Final

from lineup.actors.kernel import ErrorCode, LineUpError

from . import protocol as p
from ._channel import RuntimeChannel
from ._protocol.agent_messages import (
    MAX_LIST,
    AgentMessage,
    AgentMessageFilter,
    AgentMessagePage,
    check_types,
    message_of,
    seq_of_cursor,
)

__all__ = ["AgentMessages", "Handler", "Unsubscribe"]

Handler = Callable[[AgentMessage], Awaitable[None] | None]
Unsubscribe = Callable[[], None]
REMEMBERED: Final = 4096  # message ids a subscription remembers having taken


class _Subscription:
    def __init__(self, handler: Handler, filter: AgentMessageFilter) -> None:
        self.handler = handler
        self.filter = filter
        self.taken: OrderedDict[str, None] = OrderedDict()

    def take(self, message_id: str) -> None:
        self.taken[message_id] = None
        while len(self.taken) > REMEMBERED:
            self.taken.popitem(last=False)


class AgentMessages:
    """The app's `AgentMessageAPI` (the module's docstring)."""

    def __init__(self, host: RuntimeChannel, instance_id: str) -> None:
        self._host = host
        self._instance_id = instance_id
        self._subscriptions: list[_Subscription] = []
        self._inbox_of: OrderedDict[str, str | None] = OrderedDict()  # message -> its inbox

    async def list(
        self, conversation_id: str | None = None, after: str | None = None, limit: int = 100
    ) -> AgentMessagePage:
        """The messages waiting in this app's inbox (not yet acknowledged), oldest first,
        after the cursor `after`, at most `limit` (1..`MAX_LIST`); of `conversation_id` only
        when given. Raises `invalid_arguments` for a cursor `list` did not make or a bad
        limit. Acknowledges nothing."""
        if not 1 <= limit <= MAX_LIST:
            raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "limit out of range")
        after_seq = seq_of_cursor(after)
        found: list[AgentMessage] = []
        for instance_id in (None, self._instance_id):
            reply = await self._host.call(
                "router",
                p.InboxListRequest(instance_id=instance_id, after_seq=after_seq, limit=limit),
                p.InboxListReply,
            )
            found += (self._seen(delivery) for delivery in reply.deliveries)
        # Each inbox gave its `limit` oldest after the cursor: the merged `limit` oldest are
        # the app's. The conversation is filtered after the cut, so a page may come short.
        page = sorted(found, key=lambda message: message.seq)[:limit]
        cursor = page[-1].cursor if page else after
        if conversation_id is not None:
            page = [m for m in page if m.conversation_id == conversation_id]
        return AgentMessagePage(messages=tuple(page), cursor=cursor)

    async def subscribe(
        self,
        handler: Handler,
        *,
        conversation_id: str | None = None,
        types: Iterable[str] | None = None,
        include_pending: bool = False,
    ) -> Unsubscribe:
        """Hand `handler` each new message matching the filter (a conversation, the types of
        `protocol.AGENT_MESSAGE_TYPES`), once each. With `include_pending`, what the inbox
        already holds is handed first, before this returns: after a restart, that is what
        came while the app was down. Returns the function that ends the subscription.
        Raises `invalid_arguments` for a type no app is ever handed."""
        subscription = _Subscription(
            handler,
            AgentMessageFilter(
                conversation_id=conversation_id,
                types=check_types(types),
                include_pending=include_pending,
            ),
        )
        self._subscriptions.append(subscription)
        if include_pending:
            after: str | None = None
            while (page := await self.list(after=after, limit=MAX_LIST)).messages:
                await self._hand(page.messages, (subscription,))
                after = page.cursor

        def unsubscribe() -> None:
            if subscription in self._subscriptions:
                self._subscriptions.remove(subscription)

        return unsubscribe

    async def acknowledge(self, message_id: str) -> bool:
        """Remove a handled message from the inbox (rule 3). True if this removed it; False
        if it was not there (acknowledged already, or never this app's). Idempotent."""
        known = message_id in self._inbox_of
        inboxes = (self._inbox_of[message_id],) if known else (None, self._instance_id)
        for instance_id in inboxes:
            receipt = await self._host.call(
                "router",
                p.InboxAckRequest(delivery_id=message_id, instance_id=instance_id),
                p.CommandReceipt,
            )
            if receipt.changed:
                return True
        return False

    async def dispatch(self, deliveries: tuple[p.Delivery, ...]) -> None:
        """The host's: deliveries the runtime told of, to the subscriptions. Raises
        `handler_failed` when a handler raised (after the others ran), so the host offers
        them again."""
        if self._subscriptions:
            await self._hand(
                tuple(self._seen(delivery) for delivery in deliveries), self._subscriptions
            )

    # ------------------------------------------------------------------ inside

    def _seen(self, delivery: p.Delivery) -> AgentMessage:
        self._inbox_of[delivery.delivery_id] = delivery.instance_id
        while len(self._inbox_of) > REMEMBERED:
            self._inbox_of.popitem(last=False)
        return message_of(delivery)

    async def _hand(
        self, messages: Iterable[AgentMessage], subscriptions: Iterable[_Subscription]
    ) -> None:
        subscriptions = tuple(subscriptions)
        failure: BaseException | None = None
        done: list[p.Delivery] = []  # display messages every matching handler took
        for message in messages:
            took, failed = False, False
            for subscription in subscriptions:
                if not subscription.filter.matches(message):
                    continue
                if message.message_id in subscription.taken:
                    took = True
                    continue
                try:
                    result = subscription.handler(message)
                    if inspect.isawaitable(result):
                        await result
                except Exception as exc:  # the app's handler: any failure leaves it waiting
                    failed = True
                    failure = failure or exc
                    continue
                subscription.take(message.message_id)
                took = True
            if took and not failed and not message.requires_ack:
                done.append(_delivery_of(message))
        if done:
            for start in range(0, len(done), p.MAX_BATCH):
                await self._ack_many(done[start : start + p.MAX_BATCH])
        if failure is not None:
            # The host offers a refused delivery again (a crash of the app's would end it).
            raise LineUpError(ErrorCode.HANDLER_FAILED, type(failure).__name__) from failure

    async def _ack_many(self, deliveries: Sequence[p.Delivery]) -> None:
        by_inbox: dict[str | None, list[str]] = {}
        for delivery in deliveries:
            by_inbox.setdefault(delivery.instance_id, []).append(delivery.delivery_id)
        for instance_id, ids in by_inbox.items():
            await self._host.call(
                "router",
                p.InboxAckManyRequest(delivery_ids=tuple(ids), instance_id=instance_id),
                p.InboxAckManyReply,
            )


def _delivery_of(message: AgentMessage) -> p.Delivery:
    """Enough of the delivery to acknowledge it (its id and inbox)."""
    return p.Delivery(
        delivery_id=message.message_id,
        seq=message.seq,
        envelope={},
        instance_id=message.instance_id,
    )
