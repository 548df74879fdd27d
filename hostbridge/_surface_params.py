"""The params of each bridge method the hostbridge relays (`METHODS`), checked whole here
before anything is asked of the runtime (`_surfaces.SurfaceRelay`), and their size bound."""

import json
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt

from lineup.sdk.capabilities import MAX_PURPOSE_CHARS
from lineup.sdk.interactions import StandardInteractionRequest
from lineup.sdk.protocol import MAX_SURFACE_EVENT_BYTES

from ._surface_agent_messages import AGENT_MESSAGE_METHODS
from ._surface_mcp import MCP_METHODS
from ._surface_tools import ToolsCallParams

__all__ = [
    "APP_METHODS",
    "MAX_SURFACE_PARAMS_BYTES",
    "METHODS",
    "ActionParams",
    "CapabilityParams",
    "EventParams",
    "NoParams",
    "ReplaceParams",
    "UiRequestParams",
    "params_size",
]

MAX_SURFACE_PARAMS_BYTES: Final = MAX_SURFACE_EVENT_BYTES  # a request's params, compact JSON


class _Params(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)


class NoParams(_Params):
    pass


class ReplaceParams(_Params):
    data: dict[str, Any]
    expected_revision: StrictInt = Field(ge=0)


class EventParams(_Params):
    name: Annotated[str, Field(min_length=1, max_length=128)]
    data: dict[str, Any] = Field(default_factory=dict)


class UiRequestParams(_Params):
    """A standard interaction request (`lineup.sdk.interactions`: notice, choice, confirm,
    input), checked whole here; the router checks it again as it records it."""

    request: StandardInteractionRequest


class CapabilityParams(_Params):
    """A Surface's capability request (`lineup.sdk.capabilities`): the gateway checks the
    capability's name and its input."""

    capability: Annotated[str, Field(min_length=1, max_length=100)]
    purpose: Annotated[str, Field(min_length=1, max_length=MAX_PURPOSE_CHARS)]
    input: dict[str, Any] = Field(default_factory=dict)


class ActionParams(_Params):
    """A declarative action of the Surface's app (`lineup.sdk.protocol.AppAction`, one of
    `SURFACE_ACTION_KINDS`): focus checks it whole (`bridge_params_invalid`) and decides it."""

    action: dict[str, Any]


# The Surface's share of its app's SDK (seed 004 §6: "the same semantics, restricted"): its
# app's view model, the apps it may open, and its lifecycle and navigation actions, each asked
# of focus for the Surface's own app and instance (`focus.ui.surface.app`).
APP_METHODS: Final[dict[str, Literal["state", "state.subscribe", "apps.list", "action"]]] = {
    "lineup/state/snapshot": "state",
    "lineup/state/subscribe": "state.subscribe",  # then `hostbridge.surface.notify` app_state
    "lineup/apps/list-available": "apps.list",
    "lineup/actions/dispatch": "action",
}

# The bridge methods the hostbridge relays: to focus, and a Surface's question to the router
# (web/js/core/bridge.js answers the rest).
METHODS: Final[dict[str, type[BaseModel]]] = {
    "lineup/state/snapshot": NoParams,
    "lineup/apps/list-available": NoParams,
    "lineup/actions/dispatch": ActionParams,
    "lineup/session-data/get": NoParams,
    "lineup/session-data/replace": ReplaceParams,
    "lineup/session-data/subscribe": NoParams,
    "lineup/event": EventParams,
    "lineup/ui/request": UiRequestParams,
    "lineup/capabilities/request": CapabilityParams,
    **MCP_METHODS,  # an MCP App's (`_surface_mcp`)
    "tools/call": ToolsCallParams,
    # The Surface's app state subscription and its agent messages (issue 29).
    "lineup/state/subscribe": NoParams,
    **AGENT_MESSAGE_METHODS,
}


def params_size(params: dict[str, Any]) -> int:
    return len(json.dumps(params, separators=(",", ":"), ensure_ascii=False).encode())
