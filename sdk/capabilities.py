"""The capability catalog: the system powers a MiniApp may ask for (seed 004 §6.3, seed 003 §3.5).

No app gets a capability by declaring it. A request names one of `CATALOG`, says why
(`purpose`, shown to the user as text) and gives its input; the gateway decides, in this order,
and the first refusal is the result (`decide` below is that order as a pure function):

    1. declared     the manifest's `requested_capabilities` names it
                    else permission_denied (capability_denied)
    2. enabled      the app is enabled, the instance live
                    else failed (app_disabled / app_instance_not_found)
    3. host         this host has a provider for it, switched on
                    else unsupported_on_host (unsupported_on_host)
    4. foreground   the app is in front, if the capability needs it
                    else failed (foreground_required)
    5. policy       the user's unexpired grant, else the host's policy, else the catalog's
                    default: allow, deny (policy_denied) or ask
    6. the user     an "ask" is the runtime's own permission prompt: Allow once, Always
                    allow (a remembered grant), Deny (permission_denied) or Block (Deny,
                    and a grant of deny: the next request is policy_denied); dismissed:
                    cancelled_by_user; unanswered: expired (operation_expired). At most
                    MAX_WAITING_PROMPTS_PER_APP wait per app, and within PROMPT_QUIET_S of a
                    Deny or a dismissal the app is not asked again for it (both rate_limited)
    7. rate         at most `rate_per_minute` runs per app and capability in a sliding
                    minute, else failed (rate_limited)

Then the host provider runs it, and its outcome is the result: `completed` (with `output`),
`cancelled_by_user` (the user closed the file picker), or `failed` (provider_failed). No path,
token or native exception ever comes back, and the audit keeps ids, the capability, the
decision and the code, never the purpose, the input or the output.

An MCP App Surface's network and devices (`surface.network`, `surface.devices`) have no
provider: the grant is the outcome, which the hostbridge applies to the Surface it opens next
(`lineup.sdk.mcp_grants`).

This module is data and pure functions: the SDK (authors), the gateway (decisions), focus (the
inventory: a tool whose `permissions` name a capability its app cannot use is not published)
and the hostbridge (the providers' inputs) all read it.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from lineup.actors.kernel.errors import ErrorCode

from .mcp_grants import DEVICES_CAPABILITY, NETWORK_CAPABILITY
from .mcp_network import NETWORK_CAPABILITY as MCP_NETWORK_CAPABILITY
from .protocol import ARTIFACT_MEDIA_TYPES, MAX_ARTIFACT_BYTES

__all__ = [
    "CATALOG",
    "CATALOG_FILE_PATTERN",
    "DEFAULT_GRANT_TTL_S",
    "DEFAULT_PROMPT_TIMEOUT_S",
    "MAX_CAPABILITY_INPUT_BYTES",
    "MAX_PURPOSE_CHARS",
    "MAX_WAITING_PROMPTS_PER_APP",
    "PROMPT_DECISIONS",
    "PROMPT_QUIET_S",
    "AppInstall",
    "AppManage",
    "ArtifactSave",
    "CapabilitySpec",
    "CapabilityStatus",
    "Decision",
    "FileOpen",
    "McpServerNetwork",
    "NotificationShow",
    "Policy",
    "PromptDecision",
    "SurfaceAccess",
    "decide",
    "parse_input",
    "usable",
]

CapabilityStatus = Literal[
    "completed",
    "cancelled_by_user",
    "permission_denied",
    "unsupported_on_host",
    "policy_denied",
    "expired",
    "failed",
]
Policy = Literal["allow", "deny", "ask"]
# "block" is Deny and the permissions page's Block at once: a grant of deny, kept until lifted.
PromptDecision = Literal["allow_once", "allow_always", "deny", "block", "cancel"]
PROMPT_DECISIONS: Final = ("allow_once", "allow_always", "deny", "block", "cancel")

MAX_PURPOSE_CHARS: Final = 300
MAX_CAPABILITY_INPUT_BYTES: Final = 16 * 1024
# A bundle of the local catalog, by its plain file name: dot-separated parts of letters,
# digits, `_`, `+`, `-`, ending `.lineup` — so never a folder, a hidden file or `..`.
CATALOG_FILE_PATTERN: Final = r"^[A-Za-z0-9_+-]+(\.[A-Za-z0-9_+-]+)*\.lineup$"
DEFAULT_PROMPT_TIMEOUT_S: Final = 60.0  # a permission prompt left unanswered expires
DEFAULT_GRANT_TTL_S: Final = 30 * 24 * 3600.0  # "Always allow" is remembered this long
# Prompts one app may have waiting on the user at once (its next request: rate_limited), so one
# app's queue never holds another's question back.
MAX_WAITING_PROMPTS_PER_APP: Final = 4
# After the user denies or dismisses an app's prompt, the app's next requests of that capability
# within this long are refused rate_limited without a prompt: the Shell is not modal meanwhile,
# so the header's Permissions button (or the prompt's own Block) is in reach.
PROMPT_QUIET_S: Final = 30.0


class _Input(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class NotificationShow(_Input):
    """A notification in the Shell, and the system's (the browser's Notification API) when
    the user has allowed the Shell to show them. Output: `{}`."""

    title: Annotated[str, Field(min_length=1, max_length=120)]
    body: Annotated[str, Field(default="", max_length=1000)]


class ArtifactSave(_Input):
    """The user saves one of the app's own artifacts as a download. Output: `{}`. Another
    app's artifact, or a missing one, fails `artifact_not_found`."""

    artifact_id: Annotated[str, Field(min_length=1, max_length=200)]


class FileOpen(_Input):
    """The user picks a file in the Shell (or closes the picker: `cancelled_by_user`). The app
    gets it as a new read-only artifact of its own, never as a path. Output:
    `{"artifact": ArtifactInfo}`. `media_types` limits what may be picked (each one of
    `ARTIFACT_MEDIA_TYPES`; empty: any of them); a bigger file than `max_bytes` fails
    `artifact_too_large`."""

    media_types: tuple[Annotated[str, Field(min_length=1, max_length=100)], ...] = ()
    max_bytes: Annotated[int, Field(ge=1, le=MAX_ARTIFACT_BYTES)] = MAX_ARTIFACT_BYTES

    @field_validator("media_types")
    @classmethod
    def _known_types(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if any(t not in ARTIFACT_MEDIA_TYPES for t in value):
            raise ValueError("a media type an artifact cannot have")
        return value


class AppInstall(_Input):
    """Install (or update to) a signed bundle: exactly one of `artifact_id`, one of the app's
    artifacts (the user picked it with `file.open`), or `catalog_file`, the plain name of a
    bundle in the runtime's local catalog folder (`CATALOG_FILE_PATTERN`: no folder, no `..`;
    one the catalog does not hold fails `catalog_entry_not_found`). The App Registry's alone.
    Output: the operation (`{"operation": AppOperationView}` as
    `lineup.actors.focus.messages` shapes it)."""

    artifact_id: Annotated[str | None, Field(default=None, min_length=1, max_length=200)]
    catalog_file: Annotated[
        str | None, Field(default=None, max_length=200, pattern=CATALOG_FILE_PATTERN)
    ]

    @model_validator(mode="after")
    def _exactly_one(self) -> "AppInstall":
        if (self.artifact_id is None) == (self.catalog_file is None):
            raise ValueError("exactly one of artifact_id, catalog_file")
        return self


class AppManage(_Input):
    """Enable, disable, roll back or remove an installed app, or make one the default app.
    The App Registry's alone. Output: `{"operation": AppOperationView}`."""

    operation: Literal["enable", "disable", "rollback", "remove", "set_default"]
    app_scope: Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]{0,62}$")]


class SurfaceAccess(_Input):
    """`surface.network` and `surface.devices`: what the app's MCP App entrypoints declare
    (their domains; their `permissions`), which the runtime reads from the manifest, never
    from the request. Output: `{}`; the Surface opened next has them (`lineup.sdk.mcp_grants`)."""


class McpServerNetwork(_Input):
    """`mcp.network`: the hosts an MCP app's server declares in its manifest (`mcp.network`),
    which the runtime reads from the manifest, never from the request. Output: `{}`; the
    grant is checked at each connection the server asks for (`lineup.sdk.mcp_network`)."""


@dataclass(frozen=True)
class CapabilitySpec:
    name: str
    input: type[_Input]
    requires_foreground: bool
    default_policy: Policy
    rememberable: bool  # may the prompt offer "Always allow" (a remembered grant)?
    rate_per_minute: int
    # Who runs it once the gateway has decided; "runtime": nobody, the grant is the outcome.
    provider: Literal["hostbridge", "focus", "runtime"]


CATALOG: Final[Mapping[str, CapabilitySpec]] = {
    spec.name: spec
    for spec in (
        CapabilitySpec("notification.show", NotificationShow, False, "ask", True, 30, "hostbridge"),
        CapabilitySpec("artifact.save", ArtifactSave, True, "ask", True, 20, "hostbridge"),
        CapabilitySpec("file.open", FileOpen, True, "ask", True, 20, "hostbridge"),
        # Installing and managing apps always asks, every time (seed 004 §2.2: never silently).
        CapabilitySpec("app.install", AppInstall, True, "ask", False, 10, "focus"),
        CapabilitySpec("app.manage", AppManage, True, "ask", False, 30, "focus"),
        # An MCP App Surface's declared domains and devices (asked as it opens).
        CapabilitySpec(NETWORK_CAPABILITY, SurfaceAccess, False, "ask", True, 30, "runtime"),
        CapabilitySpec(DEVICES_CAPABILITY, SurfaceAccess, False, "ask", True, 30, "runtime"),
        # An MCP server's declared hosts (`lineup.sdk.mcp_network`).
        CapabilitySpec(MCP_NETWORK_CAPABILITY, McpServerNetwork, False, "ask", True, 30, "runtime"),
    )
}


@dataclass(frozen=True)
class Decision:
    """What the gateway does with a request: `run` (the provider, straight away), `ask` (the
    prompt first), or refuse with `status` and `code`."""

    action: Literal["run", "ask", "refuse"]
    status: CapabilityStatus | None = None
    code: ErrorCode | None = None


def decide(
    capability: str,
    *,
    declared: frozenset[str] | tuple[str, ...],
    enabled: bool,
    live: bool,
    foreground: bool,
    unsupported: frozenset[str],
    host_policy: Mapping[str, Policy],
    grant: Policy | None,
) -> Decision:
    """Steps 1–5 of the module docstring, in order (the rate limit is the gateway's, last,
    since a prompt may take a minute). `host_policy` maps capability → policy for this app
    (the host's configuration); `grant` is the user's unexpired grant, if any."""
    if capability not in declared:
        return Decision("refuse", "permission_denied", ErrorCode.CAPABILITY_DENIED)
    if not enabled:
        return Decision("refuse", "failed", ErrorCode.APP_DISABLED)
    if not live:
        return Decision("refuse", "failed", ErrorCode.APP_INSTANCE_NOT_FOUND)
    spec = CATALOG.get(capability)
    if spec is None or capability in unsupported:
        return Decision("refuse", "unsupported_on_host", ErrorCode.UNSUPPORTED_ON_HOST)
    if spec.requires_foreground and not foreground:
        return Decision("refuse", "failed", ErrorCode.FOREGROUND_REQUIRED)
    policy = grant or host_policy.get(capability) or spec.default_policy
    if policy == "deny":
        return Decision("refuse", "policy_denied", ErrorCode.POLICY_DENIED)
    return Decision("run" if policy == "allow" else "ask")


def usable(
    capability: str,
    *,
    declared: frozenset[str] | tuple[str, ...],
    unsupported: frozenset[str],
    host_policy: Mapping[str, Policy],
    grant: Policy | None,
) -> bool:
    """Could a request for `capability` ever run for this app, as things stand (declared,
    provided here, not denied by policy)? Focus leaves out of the inventory every tool whose
    `permissions` name a capability that is not usable (seed 000 §9.1, last row)."""
    if capability not in declared or capability not in CATALOG or capability in unsupported:
        return False
    return (grant or host_policy.get(capability) or CATALOG[capability].default_policy) != "deny"


def parse_input(capability: str, raw: Any) -> _Input:
    """The request's input as the capability's model; raises pydantic's ValidationError (the
    gateway answers `failed`, `invalid_arguments`) or KeyError for a name not in `CATALOG`."""
    return CATALOG[capability].input.model_validate(raw)
