"""The tool descriptor (seed 004 §7.1, seed 003 §4.2): what an Agent may know of one tool, and
the call model the runtime honours for it. No I/O.

Theory of operation
-------------------
A descriptor is generated from the code (`lineup.sdk.tools.tool`) and written in the manifest;
the runtime publishes it in the inventory and routes every call by it. Besides what it always
had (handling, activation requirement, schemas, timeout, the capabilities it may use as
`permissions`, the description for the Agent), it says

    title           the short name a person reads (optional)
    call_model      query | command | interactive | operation (seed 004 §7.1's table)
    idempotent      a retry with the same input does no more than the first call
    risk            low | medium | high: what a mistaken call can do
    launch          never | background | foreground: what the runtime may do when no instance
                    of the app is live (start none; start one without a change of focus; start
                    one in front)

Each of the last four is optional in a manifest (`None`: not declared, so today's manifests are
what they were) and always has an effective value, derived from `handling` (`model`,
`launch_strategy`):

    handling      call_model     launch        risk
    direct        command        background    medium   (seed 003 §4.4: create or reuse)
    launch        command        foreground    medium
    foreground    command        never         medium   brings a live instance forward
    interactive   interactive    foreground    medium   the user must see it to take part
    operation     operation      never         medium   works on what a live instance holds
    (any)         query          never         low      a query never launches, never focuses

Every default but `direct`'s and `interactive`'s is what the runtime did before descriptors
said it, so today's tools behave as they did; a tool declares `launch` to be started otherwise
(an operation that needs no prior instance: `background`). A `query` is `direct` and never
launches an app nor brings one forward; a descriptor that says otherwise is refused
`tool_declaration_invalid`, as is a `launch` handling that is not started in front, or a
`foreground` one in the background.
The inventory publishes the effective values (`published`), with the tool's `app_scope` and
its one `id`.

A tool may be linked to a UI (`ui`, the MCP Apps spec's `_meta.ui` of a tool): `entrypoint` is
the `surface` entrypoint of the same app it shows in (the spec's `resourceUri`; the manifest
checks it names one, `tool_ui_not_a_surface`), and `visibility` who may call it (the spec's
values: `model`, the Agent; `app`, that app's own Surface, as a local UI action; both by
default). A tool only the app may call never enters the Agent's inventory (`agent_visible`);
only a UI-linked tool whose visibility includes `app` may be called from the Surface
(`app_callable`). The runtime owns such a tool's lifecycle on the Surface
(`lineup.sdk.mcp_apps`).

A tool is named as seed 004 §7.1 names it: `app_scope / method / contract_version`. LineUp's
own form puts the scope in the method (`tasks.open` of `tasks`); the seeds' does not
(`board.create` of `whiteboard`). `tool_id` gives the one name an Agent calls either by, and
`split_tool_id` reads it back; a name with a "/" is always the seeds' form, one without it
always LineUp's.
"""

import unicodedata
from typing import Annotated, Any, Final, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    StrictBool,
    StrictInt,
    model_serializer,
    model_validator,
)
from pydantic_core import PydanticCustomError

from lineup.actors.kernel import ErrorCode, LineUpError

from .schema import SchemaUnsupported, check_subset, validate

__all__ = [
    "DEFAULT_TIMEOUT_MS",
    "MAX_TIMEOUT_MS",
    "MAX_TITLE",
    "MIN_TIMEOUT_MS",
    "Activation",
    "AppScope",
    "AppTitle",
    "CallModel",
    "Handling",
    "LaunchStrategy",
    "ManifestInvalid",
    "Name",
    "Risk",
    "ToolDescriptor",
    "ToolUi",
    "Visibility",
    "split_tool_id",
    "tool_id",
]

MIN_TIMEOUT_MS: Final = 1_000
MAX_TIMEOUT_MS: Final = 24 * 60 * 60 * 1_000
DEFAULT_TIMEOUT_MS: Final = 120_000
MAX_TITLE: Final = 80
# Control, format (zero-width, bidi), surrogate and line/paragraph-separator characters.
_NOT_PLAIN: Final = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
SCOPE_SEPARATOR: Final = "/"  # between the scope and the method in the seeds' form of a tool id

AppScope = Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]{0,62}$")]
ToolId = Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]*(\.[a-z][a-z0-9_-]*)+$", max_length=128)]
Name = Annotated[str, Field(min_length=1, max_length=128)]
Handling = Literal["direct", "interactive", "launch", "foreground", "operation"]
Activation = Literal["app_ready", "foreground_required", "activation_not_required"]
CallModel = Literal["query", "command", "interactive", "operation"]
Risk = Literal["low", "medium", "high"]
LaunchStrategy = Literal["never", "background", "foreground"]
Visibility = Literal["model", "app"]  # the MCP Apps spec's `McpUiToolVisibility`

_MODEL_OF: Final[dict[str, CallModel]] = {"interactive": "interactive", "operation": "operation"}
_LAUNCH_OF: Final[dict[str, LaunchStrategy]] = {
    "direct": "background",
    "launch": "foreground",
    "foreground": "never",
    "interactive": "foreground",
    "operation": "never",
}
# The launch strategies each handling may declare (a query's are narrower still).
_MAY_LAUNCH: Final[dict[str, frozenset[str]]] = {
    "launch": frozenset({"foreground"}),
    "foreground": frozenset({"foreground", "never"}),
}


def tool_id(app_scope: str, method: str) -> str:
    """The one name an Agent calls a tool by (the module's docstring)."""
    if method.startswith(app_scope + "."):
        return method
    return f"{app_scope}{SCOPE_SEPARATOR}{method}"


def split_tool_id(tool: str) -> tuple[str, str]:
    """`(app_scope, method)` of a tool id: `whiteboard/board.create` → `("whiteboard",
    "board.create")`, `tasks.open` → `("tasks", "tasks.open")`."""
    scope, separator, method = tool.partition(SCOPE_SEPARATOR)
    if separator:
        return scope, method
    return tool.split(".", 1)[0], tool


def _plain_text(value: str) -> str:
    if value != value.strip() or any(unicodedata.category(c) in _NOT_PLAIN for c in value):
        raise PydanticCustomError(
            "title_not_plain_text", "a title is plain text, without surrounding space"
        )
    return value


AppTitle = Annotated[str, Field(min_length=1, max_length=MAX_TITLE), AfterValidator(_plain_text)]


class ManifestInvalid(LineUpError):
    """A manifest (or a tool declaration) the runtime must refuse. `reason` is stable (see
    `lineup.sdk.manifest`); `path` is a JSON pointer into the manifest when one is known."""

    default_code = ErrorCode.INVALID_ARGUMENTS

    def __init__(self, reason: str, message: str = "", *, path: str = "") -> None:
        self.reason = reason
        self.path = path
        detail = " ".join(part for part in (path, message) if part)
        super().__init__(ErrorCode.INVALID_ARGUMENTS, f"{reason}: {detail}" if detail else reason)


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


Delivery = Literal["miniapp_sdk", "mcp"]


def check_tool_schema(schema: Any, path: str, delivery: object = "miniapp_sdk") -> None:
    """Refuse (`ManifestInvalid`) a tool schema outside the subset or whose root is no object;
    an MCP server's tool (`delivery: "mcp"`) may use all of JSON Schema 2020-12 instead
    (`_mcp_schema`)."""
    try:
        if delivery == "mcp":
            # jsonschema, imported on first use: only an MCP server's tools need it (about
            # 45 ms of imports every process that loads the SDK would pay otherwise).
            from . import _mcp_schema

            _mcp_schema.check_schema(schema)
            return
        check_subset(schema)
    except SchemaUnsupported as exc:
        raise ManifestInvalid(exc.reason, path=path + exc.path) from exc
    if schema.get("type") != "object":
        raise ManifestInvalid("schema_root_not_object", path=path + "/type")


class ToolUi(_Model):
    """A tool's link to its app's UI (the module's docstring): the spec's `McpUiToolMeta`."""

    entrypoint: Name  # a `surface` entrypoint of the same app (the spec's `resourceUri`)
    visibility: tuple[Visibility, ...] = Field(default=("model", "app"), min_length=1)

    @model_validator(mode="after")
    def _visibility_once_each(self) -> "ToolUi":
        if len(set(self.visibility)) != len(self.visibility):
            raise ValueError("each visibility once")
        return self


# Written only when declared: a manifest without them dumps as it did before they existed.
_OPTIONAL: Final = ("title", "call_model", "idempotent", "risk", "launch", "app_scope", "ui")


class ToolDescriptor(_Model):
    """One Agent-callable tool, as the runtime publishes it (never the handler). `app_scope`
    is left out of a manifest (the manifest's is the tool's); the inventory sets it."""

    method: ToolId
    contract_version: Literal["1"] = "1"
    handling: Handling
    delivery: Delivery = "miniapp_sdk"  # `mcp`: an MCP server's tool, schemas in full 2020-12
    activation_requirement: Activation = "app_ready"
    requires_foreground: StrictBool = False
    restore_previous_focus: StrictBool = True
    input_schema: dict[str, Any]
    output_schema: dict[str, Any]
    permissions: tuple[Name, ...] = ()  # the capabilities a call may use
    timeout_ms: StrictInt = Field(default=DEFAULT_TIMEOUT_MS, ge=MIN_TIMEOUT_MS, le=MAX_TIMEOUT_MS)
    description: str = Field(default="", max_length=4096)  # for the Agent
    title: AppTitle | None = None
    call_model: CallModel | None = None
    idempotent: StrictBool | None = None
    risk: Risk | None = None
    launch: LaunchStrategy | None = None
    app_scope: AppScope | None = None
    ui: ToolUi | None = None

    @model_validator(mode="after")
    def _schemas_in_subset(self) -> "ToolDescriptor":
        check_tool_schema(self.input_schema, "/input_schema", self.delivery)
        check_tool_schema(self.output_schema, "/output_schema", self.delivery)
        return self

    def input_violations(self, value: object) -> list[str]:
        """The JSON pointers of what `value` breaks in the input schema (empty: it fits)."""
        return self._violations(self.input_schema, value)

    def output_violations(self, value: object) -> list[str]:
        """The JSON pointers of what `value` breaks in the output schema (empty: it fits)."""
        return self._violations(self.output_schema, value)

    def _violations(self, schema: dict[str, Any], value: object) -> list[str]:
        if self.delivery == "mcp":
            from . import _mcp_schema  # on first use (`check_tool_schema` says why)

            return _mcp_schema.violations(schema, value)
        return validate(schema, value, checked=True)  # checked when the descriptor was made

    @model_validator(mode="after")
    def _call_model_agrees(self) -> "ToolDescriptor":
        if self.call_model == "query":
            if self.handling != "direct":
                raise ManifestInvalid("tool_declaration_invalid", self.method, path="/handling")
            if self.launch not in (None, "never") or self.requires_foreground:
                raise ManifestInvalid("tool_declaration_invalid", self.method, path="/launch")
        allowed = _MAY_LAUNCH.get(self.handling)
        if self.launch is not None and allowed is not None and self.launch not in allowed:
            raise ManifestInvalid("tool_declaration_invalid", self.method, path="/launch")
        return self

    @model_serializer(mode="wrap")
    def _declared_only(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        for key in _OPTIONAL:
            if data.get(key) is None:
                data.pop(key, None)
        return data

    # ------------------------------------------------------------------ effective values

    @property
    def model(self) -> CallModel:
        """The call model, declared or derived from `handling` (the module's table)."""
        return self.call_model or _MODEL_OF.get(self.handling, "command")

    @property
    def launch_strategy(self) -> LaunchStrategy:
        """What the runtime may do when no instance of the app is live (the module's table)."""
        if self.launch is not None:
            return self.launch
        if self.model in ("query", "interactive"):
            return "never" if self.model == "query" else "foreground"
        return _LAUNCH_OF[self.handling]

    @property
    def agent_visible(self) -> bool:
        """The Agent may know and call it: not linked to a UI, or visible to the model."""
        return self.ui is None or "model" in self.ui.visibility

    @property
    def app_callable(self) -> bool:
        """Its app's own Surface may call it (`tools/call`): UI-linked, visible to the app."""
        return self.ui is not None and "app" in self.ui.visibility

    @property
    def scope(self) -> str:
        """The app the tool belongs to: its `app_scope` when placed, else its method's prefix."""
        return self.app_scope or self.method.split(".", 1)[0]

    @property
    def id(self) -> str:
        """The one name an Agent calls it by (`tool_id`)."""
        return tool_id(self.scope, self.method)

    def placed(self, app_scope: str) -> "ToolDescriptor":
        """This tool as the inventory holds it: of `app_scope`."""
        return self.model_copy(update={"app_scope": app_scope})

    def published(self) -> dict[str, Any]:
        """The JSON the Agent gets in the inventory: every field with its effective value, the
        tool's `app_scope` and its `id`, so both forms of a name read one way only."""
        data = self.model_dump(mode="json")
        data.update(
            id=self.id,
            app_scope=self.scope,
            call_model=self.model,
            launch=self.launch_strategy,
            idempotent=bool(self.idempotent),
            risk=self.risk or ("low" if self.model == "query" else "medium"),
        )
        return data
