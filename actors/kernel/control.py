"""The kernel protocol: what every actor and the supervisor say to each other.

`kernel.*` is understood by every actor; `supervisor.*` travels on a child's control channel.
"""

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from lineup.facts.children import ChildState
from lineup.facts.link import SUPERVISOR_PHASES
from lineup.facts.view_log import MAX_VIEW_LOG_CHARS, ViewLogLevel

from .messages import Message

__all__ = [
    "SUPERVISOR_PHASES",
    "ActorReadyEvent",
    "AppFailedEvent",
    "AppViewLogEvent",
    "ChannelOpenedEvent",
    "ChildStartReply",
    "ChildStartRequest",
    "ChildStatus",
    "ChildStopReply",
    "ChildStopRequest",
    "HealthReply",
    "HealthRequest",
    "IntroduceReply",
    "IntroduceRequest",
    "LandlockLayer",
    "PeerMisbehavedEvent",
    "RuntimeLink",
    "RuntimeLinkEvent",
    "RuntimeStateEvent",
    "SandboxLayer",
    "SandboxStatus",
    "SeccompLayer",
    "StatusReply",
    "StatusRequest",
]


class HealthRequest(Message):
    type: Literal["kernel.health.request"] = "kernel.health.request"


class HealthReply(Message):
    type: Literal["kernel.health.reply"] = "kernel.health.reply"
    name: str
    pid: int
    incarnation: int
    uptime_s: float


class ActorReadyEvent(Message):
    """A child tells the supervisor its `run` has called `task_status.started()`."""

    type: Literal["supervisor.actor.ready"] = "supervisor.actor.ready"
    pid: int


class IntroduceRequest(Message):
    """Ask the supervisor for a direct channel to `peer` (DESIGN §2, the Mojo-broker model)."""

    type: Literal["supervisor.introduce.request"] = "supervisor.introduce.request"
    peer: str


class IntroduceReply(Message):
    type: Literal["supervisor.introduce.reply"] = "supervisor.introduce.reply"
    peer: str
    incarnation: int


class ChannelOpenedEvent(Message):
    """Sent by the supervisor with one socket end attached (SCM_RIGHTS). The receiver binds
    the identity given *here*: it comes from the supervisor, the only party it trusts."""

    type: Literal["supervisor.channel.opened"] = "supervisor.channel.opened"
    peer: str
    kind: str
    incarnation: int


class PeerMisbehavedEvent(Message):
    """A peer broke the protocol on a direct channel (malformed or oversize frame)."""

    type: Literal["supervisor.peer.misbehaved"] = "supervisor.peer.misbehaved"
    peer: str
    incarnation: int
    code: str


class RuntimeStateEvent(Message):
    """transport → hostbridge: the runtime's lifecycle state changed (DESIGN §5); supervisor →
    hostbridge: its own part began or ended (`SUPERVISOR_PHASES`). Here, not among the
    hostbridge's messages: the supervisor sends it, and imports nothing of the Shell's protocol
    (the SDK's messages with it) to do so."""

    type: Literal["hostbridge.runtime.state"] = "hostbridge.runtime.state"
    state: str
    reason: str | None = None  # an appserver_* code while reconnecting / offline_degraded
    # When the transport entered this state (CLOCK_MONOTONIC, one clock for every process of
    # the machine): of two accounts of the link, a tell and a request's reply, that cross on
    # the way, the later-entered state is the one that holds.
    since_ns: int = 0


class RuntimeLinkEvent(Message):
    """transport → supervisor: the runtime's lifecycle state and, while the link is down, why
    (an `appserver_*` code), for `lineup status`."""

    type: Literal["supervisor.runtime.state"] = "supervisor.runtime.state"
    state: str = Field(max_length=64)
    reason: str | None = Field(default=None, max_length=100)


class AppViewLogEvent(Message):
    """hostbridge → supervisor: one log line an app's Surface sent (MCP Apps'
    `notifications/message`), for that app's own log, never the runtime's or the audit."""

    type: Literal["supervisor.app.view_log"] = "supervisor.app.view_log"
    app_scope: str = Field(pattern=r"^[a-z][a-z0-9-]{0,62}$")
    level: ViewLogLevel
    text: str = Field(max_length=MAX_VIEW_LOG_CHARS)


class RuntimeLink(Message):
    type: Literal["supervisor.runtime"] = "supervisor.runtime"
    state: str
    reason: str | None = None


class ChildStatus(Message):
    type: Literal["supervisor.child.status"] = "supervisor.child.status"
    name: str
    kind: str
    pid: int | None
    state: ChildState
    restarts: int
    uptime_s: float | None


class StatusRequest(Message):
    type: Literal["supervisor.status.request"] = "supervisor.status.request"


class SandboxLayer(BaseModel):
    """One layer of the MiniApp sandbox, as this kernel offers it (DESIGN §8)."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    available: bool


class LandlockLayer(SandboxLayer):
    abi: int  # 0 when the kernel has no Landlock
    network: bool  # TCP bind/connect rules (ABI 4)
    scopes: bool  # abstract-socket and signal scoping (ABI 6)


class SeccompLayer(SandboxLayer):
    audit: bool  # each denial answered and audited by the supervisor (user notification)


class SandboxStatus(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    netns: SandboxLayer
    landlock: LandlockLayer
    rlimits: SandboxLayer
    capabilities: SandboxLayer
    seccomp: SeccompLayer
    missing: tuple[str, ...]  # layers MiniApps need that this kernel lacks


class StatusReply(Message):
    type: Literal["supervisor.status.reply"] = "supervisor.status.reply"
    pid: int
    state: str
    data_dir: str
    uptime_s: float
    children: tuple[ChildStatus, ...]
    zygote_pid: int | None = None
    sandbox: SandboxStatus | None = None
    runtime: RuntimeLink | None = None  # the transport's last word; None before it spoke
    info: dict[str, str] = {}


class ChildStartRequest(Message):
    """focus → supervisor: run (or keep running) the process of one MiniApp."""

    type: Literal["supervisor.child.start"] = "supervisor.child.start"
    name: str
    config: dict[str, Any]


class ChildStartReply(Message):
    type: Literal["supervisor.child.start.reply"] = "supervisor.child.start.reply"
    name: str
    pid: int
    incarnation: int


class ChildStopRequest(Message):
    """focus → supervisor: stop one MiniApp's process (its instances are closed)."""

    type: Literal["supervisor.child.stop"] = "supervisor.child.stop"
    name: str


class ChildStopReply(Message):
    type: Literal["supervisor.child.stop.reply"] = "supervisor.child.stop.reply"
    name: str
    stopped: bool


class AppFailedEvent(Message):
    """supervisor → focus: a MiniApp's process was stopped for breaking its contract, or
    ended by itself; its instances are failed (it is not restarted)."""

    type: Literal["focus.app.failed"] = "focus.app.failed"
    app_scope: str
    code: str
