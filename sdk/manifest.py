"""The non-executable MiniApp manifest, `lineup.app.v1` (seed 004 §9, seed 003 §4.1–4.2).

The runtime never imports a MiniApp's code: what it knows of an app (its scope, its title,
version, kind, features, subscriptions, capabilities and tools) is this document. The `title`
is optional, the name the Shell and the App Registry show (else the scope): plain text of
1..MAX_TITLE characters, no control, format or line-separator character, no surrounding space.
It is written only when set, so a manifest without one is what it was before titles existed.

The seeds' own example (seed 004 §9) loads as written: `kind` defaults to `installed`, `host`
to any host, the seeds' feature names are offered beside LineUp's (`SEED_FEATURES`), and a tool
is named as seed 004 §7.1 names it, `app_scope / method / contract_version`: its `method` need
not start with the app's scope. The one name an Agent calls it by is `tool_id(app_scope,
method)`: the method itself when it starts with "<app_scope>." (LineUp's form, `tasks.open`),
else "<app_scope>/<method>" (`whiteboard/board.create`), so either form reads one way only.
The tool descriptor and its call models are in `lineup.sdk._tool_model`.

A `Manifest` object is always valid: constructing one runs every check, so `load_manifest` is
only parsing plus translation of the refusal into `ManifestInvalid` with a stable `reason`:

    manifest_not_json       bytes/str that are not one JSON object (or too large, or NaN, or a
                            duplicate key)
    format_unsupported      `format` is not "lineup.app.v1"
    manifest_malformed      a field is missing, unknown, or of the wrong shape
    scope_reserved          `app_scope` is the runtime's own (`lineup.facts.scopes.reserved`):
                            `interaction`, `conversation`, `lineup`, `lineup-*`
    capability_reserved     a requested capability that belongs to one resident app
                            (`app.install`, `app.manage`: the App Registry's) asked by another
    tool_id_not_scoped      a tool's `method` begins with a scope the runtime reserves
                            (`interaction.…`, `lineup.…`), or its `app_scope` is another app's
    duplicate_tool          two tools share a `method`
    tool_id_too_long        a tool's id (`tool_id`) is longer than `MAX_TOOL_ID`: no call could
                            name it
    tool_ui_not_a_surface   a tool's `ui.entrypoint` names no `surface` entrypoint of the app
    tool_declaration_invalid  a tool's call model contradicts its handling or launch strategy
                            (a `query` that launches an app or brings one forward)
    schema_*                a tool schema outside the subset (see `lineup.sdk.schema`), or a
                            tool schema whose root is not an object (schema_root_not_object)
"""

import json
from pathlib import Path
from typing import Annotated, Any, Final, Literal

from pydantic import (
    Field,
    SerializerFunctionWrapHandler,
    StrictBool,
    StrictInt,
    ValidationError,
    model_serializer,
    model_validator,
)

from lineup.actors.kernel import ErrorCode
from lineup.facts.limits import MAX_TOOL_ID
from lineup.facts.scopes import CAPABILITY_OWNERS, reserved
from lineup.facts.versions import compare_versions

from ._tool_model import (
    DEFAULT_TIMEOUT_MS,
    MAX_TIMEOUT_MS,
    MAX_TITLE,
    MIN_TIMEOUT_MS,
    AppScope,
    AppTitle,
    CallModel,
    LaunchStrategy,
    ManifestInvalid,
    Name,
    Risk,
    ToolDescriptor,
    ToolUi,
    _Model,
    check_tool_schema,
    split_tool_id,
    tool_id,
)
from .mcp_apps import McpAppUi
from .mcp_grants import implied_capabilities, union
from .mcp_network import MAX_HOSTS, HostPort
from .mcp_network import NETWORK_CAPABILITY as MCP_NETWORK_CAPABILITY

__all__ = [
    "ANY_HOST",
    "CLOSE_REQUESTS_FEATURE",
    "CONVERSATION_TEXTS",
    "CORE_KINDS",
    "DEFAULT_TIMEOUT_MS",
    "FORMAT",
    "HOST_FEATURES",
    "MAX_MANIFEST_BYTES",
    "MAX_TIMEOUT_MS",
    "MAX_TITLE",
    "MIN_TIMEOUT_MS",
    "SDK_API_VERSIONS",
    "SEED_FEATURES",
    "SURFACE_CLIENT",
    "SURFACE_CLIENT_URL",
    "SURFACE_KIND",
    "SURFACE_VERSIONS",
    "AgentSubscription",
    "AppTitle",
    "CallModel",
    "Entrypoint",
    "Host",
    "LaunchStrategy",
    "Manifest",
    "ManifestInvalid",
    "McpServer",
    "Risk",
    "RuntimeSdk",
    "SubscriptionScope",
    "ToolDescriptor",
    "ToolUi",
    "incompatibility",
    "load_manifest",
    "manifest_json",
    "split_tool_id",
    "tool_id",
]

FORMAT: Final = "lineup.app.v1"
MAX_MANIFEST_BYTES: Final = 1024 * 1024
Kind = Literal["system", "core", "bundled-reference", "installed", "mcp"]
CORE_KINDS: Final = frozenset({"system", "core"})  # manifest kinds that are the seed's `core`
ANY_HOST: Final = "0"  # a manifest without `host` runs on any host version


class RuntimeSdk(_Model):
    """The SDK an app was written against. Any version and feature name parses; whether this
    host can run it is `incompatibility`'s, checked at install, enable and launch."""

    api_version: Annotated[str, Field(pattern=r"^[0-9]{1,4}$")] = "1"
    required_features: tuple[Name, ...] = ()
    optional_features: tuple[Name, ...] = ()


SDK_API_VERSIONS: Final = frozenset({"1"})  # the runtime_sdk api versions this host runs
# An app that declares this feature (optional or required) is asked before the user's close of
# one of its instances in the Shell, instead of being closed (`protocol.UI_CLOSE_REQUESTED`).
CLOSE_REQUESTS_FEATURE: Final = "app.close_requests.v1"
# The seeds' names for what this host offers (seed 004 §9's example manifest asks these), each
# beside LineUp's own: the lifecycle API, a Surface's state, session data, artifacts.
SEED_FEATURES: Final = frozenset(
    {"app.lifecycle.v1", "surface.state.v1", "app.session-data.v1", "artifact.create.v1"}
)
# What `runtime_sdk.required_features` may ask of this host.
HOST_FEATURES: Final = (
    frozenset(
        f"app.{name}.v1"
        for name in (
            "tools",
            "inbox",
            "interactions",
            "app_sessions",
            "surfaces",
            "session_data",
            "artifacts",
            "capabilities",
        )
    )
    | {CLOSE_REQUESTS_FEATURE}
    | SEED_FEATURES
)


SURFACE_KIND: Final = "surface"
SURFACE_VERSIONS: Final = frozenset({1})  # the Surface bridge versions this host runs
# The Surface bridge's client (a classic script): the hostbridge serves it to every open
# Surface at SURFACE_CLIENT_URL, under the Surface's own path, so no app ships a copy.
SURFACE_CLIENT: Final = Path(__file__).resolve().parent / "web" / "surface-bridge.js"
SURFACE_CLIENT_URL: Final = "_lineup/bridge.js"
DocumentPath = Annotated[
    str, Field(pattern=r"^[A-Za-z0-9_-]+(/[A-Za-z0-9_-]+)*\.html$", max_length=200)
]
EventName = Annotated[
    str, Field(pattern=r"^[a-z][a-z0-9_-]*(\.[a-z][a-z0-9_-]*)*$", max_length=128)
]


class Entrypoint(_Model):
    """A way into the app. One of kind `surface` is its Surface (seed 003 §3.5): `document` is
    the HTML file under the app package's `web/` folder that the Shell frames, `surface_version`
    the bridge version it speaks (a host runs `SURFACE_VERSIONS`; another is declared fine and
    refused at open, `surface_unavailable`), and `events` the app events (`lineup/event`
    names) the Surface may send, every other name being refused. `mcp_app`: the document is
    an MCP App's UI (`lineup.sdk.mcp_apps`), served as one."""

    id: Name
    kind: Name
    default_eligible: StrictBool = False
    document: DocumentPath = "index.html"
    surface_version: StrictInt = Field(default=1, ge=1, le=1000)
    events: tuple[EventName, ...] = Field(default=(), max_length=64)
    mcp_app: McpAppUi | None = None

    @model_serializer(mode="wrap")
    def _mcp_app_only_when_set(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Never `"mcp_app": null`: an entrypoint of a LineUp page dumps as it did before.
        data: dict[str, Any] = handler(self)
        if self.mcp_app is None:
            data.pop("mcp_app", None)
        return data


SubscriptionScope = Literal["instance", "conversation"]
# The permission to be handed the Agent's conversation-wide texts (seed 004 §5.3: "another
# subscription" than an app's own instance's): the router's `NEEDS_PERMISSION`, held by the core
# apps and by an app whose manifest declares that subscription itself.
CONVERSATION_TEXTS: Final = "agent_messages.conversation"


class AgentSubscription(_Model):
    type: Name
    scope: SubscriptionScope


class Host(_Model):
    min_version: Name = ANY_HOST
    surface_required: StrictBool = False


class McpServer(_Model):
    """How an MCP app's server starts (kind `mcp`): its command and arguments, run over stdio
    by LineUp's adapter inside the app's sandbox, from its own folder."""

    command: tuple[Annotated[str, Field(min_length=1, max_length=4096)], ...] = Field(
        min_length=1, max_length=256
    )
    # The hosts the server must reach (`host:port`): asked of the user as `mcp.network`, never
    # had by declaring (`lineup.sdk.mcp_network`).
    network: tuple[HostPort, ...] = Field(default=(), max_length=MAX_HOSTS)

    @model_serializer(mode="wrap")
    def _network_only_when_set(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Never `"network": []`: a server that declares none dumps as it did before.
        data: dict[str, Any] = handler(self)
        if not self.network:
            data.pop("network", None)
        return data


class Manifest(_Model):
    """`lineup.app.v1`. Constructing one checks everything; refusals raise `ManifestInvalid`
    (or pydantic's `ValidationError` for a malformed field when built directly)."""

    format: Literal["lineup.app.v1"]
    app_scope: AppScope
    title: AppTitle | None = None
    version: Annotated[str, Field(min_length=1, max_length=64)]
    kind: Kind = "installed"  # seed 004 §9's manifest has none: a downloaded app's
    runtime_sdk: RuntimeSdk = RuntimeSdk()
    entrypoints: tuple[Entrypoint, ...] = ()
    agent_subscriptions: tuple[AgentSubscription, ...] = ()
    requested_capabilities: tuple[Name, ...] = ()
    host: Host = Host()
    tools: tuple[ToolDescriptor, ...] = ()
    mcp: McpServer | None = None  # kind `mcp` only: the server LineUp's adapter runs

    @model_validator(mode="before")
    @classmethod
    def _raw_checks(cls, data: Any) -> Any:
        # Before the fields are parsed, so a refusal can name the tool's index in its path.
        if not isinstance(data, dict):
            return data
        if data.get("format") != FORMAT:
            raise ManifestInvalid("format_unsupported", path="/format")
        tools = data.get("tools")
        if isinstance(tools, list | tuple):
            for i, tool in enumerate(tools):
                if isinstance(tool, dict):
                    for key in ("input_schema", "output_schema"):
                        if key in tool:
                            where = f"/tools/{i}/{key}"
                            check_tool_schema(tool[key], where, tool.get("delivery"))
        return data

    @model_serializer(mode="wrap")
    def _title_only_when_set(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Never `"title": null`: a manifest without a title dumps as it did before titles.
        data: dict[str, Any] = handler(self)
        if self.title is None:
            data.pop("title", None)
        if self.mcp is None:
            data.pop("mcp", None)
        return data

    @model_validator(mode="after")
    def _mcp_server_for_its_kind(self) -> "Manifest":
        if (self.kind == "mcp") != (self.mcp is not None):
            raise ManifestInvalid("manifest_malformed", "kind mcp names its server", path="/mcp")
        return self

    @model_validator(mode="after")
    def _no_power_of_the_runtime(self) -> "Manifest":
        if reserved(self.app_scope):
            raise ManifestInvalid("scope_reserved", self.app_scope, path="/app_scope")
        for i, name in enumerate(self.requested_capabilities):
            owner = CAPABILITY_OWNERS.get(name)
            if owner is not None and owner != self.app_scope:
                raise ManifestInvalid(
                    "capability_reserved", name, path=f"/requested_capabilities/{i}"
                )
        return self

    @model_validator(mode="after")
    def _tools_belong_to_the_app(self) -> "Manifest":
        # A method may be the seeds' (`board.create`) or LineUp's (`whiteboard.create`): the
        # tool's id says which (`tool_id`). A method in the runtime's own namespace is not the
        # app's to name, nor is another app's `app_scope`.
        seen: set[str] = set()
        for i, tool in enumerate(self.tools):
            prefix = tool.method.split(".", 1)[0]
            if reserved(prefix) or tool.app_scope not in (None, self.app_scope):
                raise ManifestInvalid("tool_id_not_scoped", tool.method, path=f"/tools/{i}/method")
            if len(tool_id(self.app_scope, tool.method)) > MAX_TOOL_ID:
                raise ManifestInvalid("tool_id_too_long", tool.method, path=f"/tools/{i}/method")
            if tool.method in seen:
                raise ManifestInvalid("duplicate_tool", tool.method, path=f"/tools/{i}/method")
            seen.add(tool.method)
        surfaces = {e.id for e in self.entrypoints if e.kind == SURFACE_KIND}
        for i, tool in enumerate(self.tools):
            if tool.ui is not None and tool.ui.entrypoint not in surfaces:
                raise ManifestInvalid(
                    "tool_ui_not_a_surface", tool.method, path=f"/tools/{i}/ui/entrypoint"
                )
        return self

    @property
    def mcp_access(self) -> McpAppUi:
        """Everything its MCP App entrypoints declare (`lineup.sdk.mcp_grants.union`)."""
        return union(e.mcp_app for e in self.entrypoints if e.mcp_app is not None)

    @property
    def declared_capabilities(self) -> tuple[str, ...]:
        """`requested_capabilities`, and those its MCP App entrypoints' declarations imply
        (`surface.network` for a domain, `surface.devices` for a permission), and `mcp.network`
        for its server's declared hosts: what the gateway
        decides against and the permissions page lists."""
        implied = implied_capabilities(self.mcp_access)
        if self.mcp is not None and self.mcp.network:
            implied += (MCP_NETWORK_CAPABILITY,)
        return self.requested_capabilities + tuple(
            c for c in implied if c not in self.requested_capabilities
        )

    def placed_tools(self) -> tuple[ToolDescriptor, ...]:
        """The tools as the inventory holds them: each with this app's `app_scope`."""
        return tuple(tool.placed(self.app_scope) for tool in self.tools)


def incompatibility(manifest: Manifest, host_version: str | None = None) -> ErrorCode | None:
    """Why this host cannot run the app, None when it can: `app_version_mismatch` (its
    `runtime_sdk` asks an api version or a required feature the host does not have), or, given
    the host's version, `host_version_unsupported` (its `host.min_version` is above it)."""
    sdk = manifest.runtime_sdk
    if sdk.api_version not in SDK_API_VERSIONS or not set(sdk.required_features) <= HOST_FEATURES:
        return ErrorCode.APP_VERSION_MISMATCH
    if host_version is not None and compare_versions(manifest.host.min_version, host_version) > 0:
        return ErrorCode.HOST_VERSION_UNSUPPORTED
    return None


def load_manifest(data: dict[str, Any] | str | bytes) -> "Manifest":
    """Parse and check a manifest. Raises `ManifestInvalid`; never imports or runs app code."""
    if isinstance(data, str | bytes):
        if len(data) > MAX_MANIFEST_BYTES:
            raise ManifestInvalid("manifest_not_json", "too large")
        try:
            data = json.loads(
                data, parse_constant=_refuse_constant, object_pairs_hook=_refuse_duplicates
            )
        except (ValueError, RecursionError) as exc:
            raise ManifestInvalid("manifest_not_json") from exc
        if not isinstance(data, dict):
            raise ManifestInvalid("manifest_not_json", "not an object")
    try:
        return Manifest.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        where = "/" + "/".join(str(part) for part in first["loc"])
        raise ManifestInvalid("manifest_malformed", first["type"], path=where) from None


def manifest_json(manifest: Manifest) -> str:
    """The manifest as the CLI writes it: sorted keys, 2-space indent, trailing newline."""
    return json.dumps(manifest.model_dump(mode="json"), sort_keys=True, indent=2) + "\n"


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _refuse_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result = dict(pairs)
    if len(result) != len(pairs):
        raise ValueError("duplicate key")
    return result
