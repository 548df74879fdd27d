"""The actor kernel: channels, frames, typed messages, the bus, the actor base (DESIGN §2)."""

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
