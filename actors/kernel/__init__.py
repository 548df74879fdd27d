"""The actor kernel: channels, frames, typed messages, the bus, the actor base (DESIGN §2).

The public names are exported lazily: importing one module of the kernel (`errors`, `identity`,
`messages`) loads that module alone (`errors`, with the codes it re-exports from
`lineup.facts.errors`), so a pure module (a state machine's table, a protocol) that names an
error code loads neither trio nor a socket. The zygote loads the whole kernel
(`lineup.actors.kernel.actor`) before it forks any actor.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lineup._lazy import exports

if TYPE_CHECKING:
    from .acl import ACL, channel_allowed, message_allowed
    from .actor import Actor, ActorContext, BootInfo, actor_main, handles, load_target
    from .audit import AuditAppendReply, AuditAppendRequest, AuditRecord
    from .bus import DEFAULT_TIMEOUT, Bus, Connection, Envelope, Handler, Outcome
    from .channel import Channel, channel_pair
    from .control import HealthReply, HealthRequest
    from .errors import (
        ActorRestarted,
        ChannelClosed,
        DeadlineExceeded,
        ErrorCode,
        LineUpError,
        LocalProtocolError,
        RemoteProtocolError,
    )
    from .framing import DEFAULT_MAX_FRAME, Frame, FrameDecoder, encode_frame, parse_frame
    from .identity import RUNTIME_KINDS, ActorKind, Identity, app_scope_of
    from .messages import REGISTRY, Message

__all__ = [
    "ACL",
    "DEFAULT_MAX_FRAME",
    "DEFAULT_TIMEOUT",
    "REGISTRY",
    "RUNTIME_KINDS",
    "Actor",
    "ActorContext",
    "ActorKind",
    "ActorRestarted",
    "AuditAppendReply",
    "AuditAppendRequest",
    "AuditRecord",
    "BootInfo",
    "Bus",
    "Channel",
    "ChannelClosed",
    "Connection",
    "DeadlineExceeded",
    "Envelope",
    "ErrorCode",
    "Frame",
    "FrameDecoder",
    "Handler",
    "HealthReply",
    "HealthRequest",
    "Identity",
    "LineUpError",
    "LocalProtocolError",
    "Message",
    "Outcome",
    "RemoteProtocolError",
    "actor_main",
    "app_scope_of",
    "channel_allowed",
    "channel_pair",
    "encode_frame",
    "handles",
    "load_target",
    "message_allowed",
    "parse_frame",
]

_HOMES = {
    "ACL": ".acl",
    "channel_allowed": ".acl",
    "message_allowed": ".acl",
    "Actor": ".actor",
    "ActorContext": ".actor",
    "BootInfo": ".actor",
    "actor_main": ".actor",
    "handles": ".actor",
    "load_target": ".actor",
    "AuditAppendReply": ".audit",
    "AuditAppendRequest": ".audit",
    "AuditRecord": ".audit",
    "Bus": ".bus",
    "Connection": ".bus",
    "DEFAULT_TIMEOUT": ".bus",
    "Envelope": ".bus",
    "Handler": ".bus",
    "Outcome": ".bus",
    "Channel": ".channel",
    "channel_pair": ".channel",
    "HealthReply": ".control",
    "HealthRequest": ".control",
    "ActorRestarted": ".errors",
    "ChannelClosed": ".errors",
    "DeadlineExceeded": ".errors",
    "ErrorCode": ".errors",
    "LineUpError": ".errors",
    "LocalProtocolError": ".errors",
    "RemoteProtocolError": ".errors",
    "DEFAULT_MAX_FRAME": ".framing",
    "Frame": ".framing",
    "FrameDecoder": ".framing",
    "encode_frame": ".framing",
    "parse_frame": ".framing",
    "ActorKind": ".identity",
    "Identity": ".identity",
    "RUNTIME_KINDS": ".identity",
    "app_scope_of": ".identity",
    "Message": ".messages",
    "REGISTRY": ".messages",
}


__getattr__ = exports(__name__, _HOMES)
