"""The non-executable MiniApp manifest, `lineup.app.v1` (seed 004 §9, seed 003 §4.1–4.2).

The runtime never imports a MiniApp's code: what it knows of an app (its scope, its title,
version, kind, features, subscriptions, capabilities and tools) is this document. The `title`
is optional, the name the Shell and the App Registry show (else the scope): plain text of
1..MAX_TITLE characters, no control, format or line-separator character, no surrounding space.
It is written only when set, so a manifest without one is what it was before titles existed.

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
    tool_id_not_scoped      a tool's `method` does not start with "<app_scope>."
    duplicate_tool          two tools share a `method`
    schema_*                a tool schema outside the subset (see `lineup.sdk.schema`), or a
                            tool schema whose root is not an object (schema_root_not_object)
"""

from __future__ import annotations

import json
import unicodedata
from pathlib import Path
from typing import Annotated, Any, Final, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    StrictBool,
    StrictInt,
    ValidationError,
    model_serializer,
    model_validator,
)
from pydantic_core import PydanticCustomError

from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.facts.scopes import CAPABILITY_OWNERS, reserved
from lineup.facts.versions import compare_versions

from .mcp_apps import McpAppUi
from .schema import SchemaUnsupported, check_subset

__all__ = [
    "CLOSE_REQUESTS_FEATURE",
    "FORMAT",
    "HOST_FEATURES",
    "MAX_MANIFEST_BYTES",
    "MAX_TITLE",
    "SDK_API_VERSIONS",
    "SURFACE_CLIENT",
    "SURFACE_CLIENT_URL",
    "SURFACE_KIND",
    "SURFACE_VERSIONS",
    "AgentSubscription",
    "AppTitle",
    "Entrypoint",
    "Host",
    "Manifest",
    "ManifestInvalid",
    "RuntimeSdk",
    "ToolDescriptor",
    "incompatibility",
    "load_manifest",
    "manifest_json",
]

FORMAT: Final = "lineup.app.v1"
MAX_MANIFEST_BYTES: Final = 1024 * 1024
MIN_TIMEOUT_MS: Final = 1_000
MAX_TIMEOUT_MS: Final = 24 * 60 * 60 * 1_000
DEFAULT_TIMEOUT_MS: Final = 120_000
MAX_TITLE: Final = 80
# Control, format (zero-width, bidi), surrogate and line/paragraph-separator characters.
_NOT_PLAIN: Final = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})

AppScope = Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]{0,62}$")]
ToolId = Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]*(\.[a-z][a-z0-9_-]*)+$", max_length=128)]
Name = Annotated[str, Field(min_length=1, max_length=128)]
Handling = Literal["direct", "interactive", "launch", "foreground", "operation"]
Activation = Literal["app_ready", "foreground_required", "activation_not_required"]
Kind = Literal["system", "core", "bundled-reference", "installed"]


def _plain_text(value: str) -> str:
    if value != value.strip() or any(unicodedata.category(c) in _NOT_PLAIN for c in value):
        raise PydanticCustomError(
            "title_not_plain_text", "a title is plain text, without surrounding space"
        )
    return value


AppTitle = Annotated[str, Field(min_length=1, max_length=MAX_TITLE), AfterValidator(_plain_text)]


class ManifestInvalid(LineUpError):
    """A manifest (or a tool declaration) the runtime must refuse. `reason` is stable (see the
    module docstring); `path` is a JSON pointer into the manifest when one is known."""

    default_code = ErrorCode.INVALID_ARGUMENTS

    def __init__(self, reason: str, message: str = "", *, path: str = "") -> None:
        self.reason = reason
        self.path = path
        detail = " ".join(part for part in (path, message) if part)
        super().__init__(ErrorCode.INVALID_ARGUMENTS, f"{reason}: {detail}" if detail else reason)


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


def _check_tool_schema(schema: Any, path: str) -> None:
    try:
        check_subset(schema)
    except SchemaUnsupported as exc:
        raise ManifestInvalid(exc.reason, path=path + exc.path) from exc
    if schema.get("type") != "object":
        raise ManifestInvalid("schema_root_not_object", path=path + "/type")


class ToolDescriptor(_Model):
    """One Agent-callable tool, as the runtime publishes it (never the handler)."""

    method: ToolId
    contract_version: Literal["1"] = "1"
    handling: Handling
    delivery: Literal["miniapp_sdk"] = "miniapp_sdk"
    activation_requirement: Activation = "app_ready"
    requires_foreground: StrictBool = False
    restore_previous_focus: StrictBool = True
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    permissions: tuple[Name, ...] = ()
    timeout_ms: StrictInt = Field(default=DEFAULT_TIMEOUT_MS, ge=MIN_TIMEOUT_MS, le=MAX_TIMEOUT_MS)
    description: str = Field(default="", max_length=4096)

    @model_validator(mode="after")
    def _schemas_in_subset(self) -> ToolDescriptor:
        _check_tool_schema(self.input_schema, "/input_schema")
        _check_tool_schema(self.output_schema, "/output_schema")
        return self


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
# What `runtime_sdk.required_features` may ask of this host.
HOST_FEATURES: Final = frozenset(
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
) | {CLOSE_REQUESTS_FEATURE}


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


class AgentSubscription(_Model):
    type: Name
    scope: Literal["instance", "conversation"]


class Host(_Model):
    min_version: Name
    surface_required: StrictBool = False


class Manifest(_Model):
    """`lineup.app.v1`. Constructing one checks everything; refusals raise `ManifestInvalid`
    (or pydantic's `ValidationError` for a malformed field when built directly)."""

    format: Literal["lineup.app.v1"]
    app_scope: AppScope
    title: AppTitle | None = None
    version: Annotated[str, Field(min_length=1, max_length=64)]
    kind: Kind
    runtime_sdk: RuntimeSdk = RuntimeSdk()
    entrypoints: tuple[Entrypoint, ...] = ()
    agent_subscriptions: tuple[AgentSubscription, ...] = ()
    requested_capabilities: tuple[Name, ...] = ()
    host: Host
    tools: tuple[ToolDescriptor, ...] = ()

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
                            _check_tool_schema(tool[key], f"/tools/{i}/{key}")
        return data

    @model_serializer(mode="wrap")
    def _title_only_when_set(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Never `"title": null`: a manifest without a title dumps as it did before titles.
        data: dict[str, Any] = handler(self)
        if self.title is None:
            data.pop("title", None)
        return data

    @model_validator(mode="after")
    def _no_power_of_the_runtime(self) -> Manifest:
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
    def _tools_belong_to_the_app(self) -> Manifest:
        seen: set[str] = set()
        for i, tool in enumerate(self.tools):
            if not tool.method.startswith(self.app_scope + "."):
                raise ManifestInvalid("tool_id_not_scoped", tool.method, path=f"/tools/{i}/method")
            if tool.method in seen:
                raise ManifestInvalid("duplicate_tool", tool.method, path=f"/tools/{i}/method")
            seen.add(tool.method)
        return self


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


def load_manifest(data: dict[str, Any] | str | bytes) -> Manifest:
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
