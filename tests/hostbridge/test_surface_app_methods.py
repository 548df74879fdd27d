"""The Surface's share of its app's SDK (issue 29, item 1) is one fact in three places: the
SDK's protocol (`SURFACE_ACTION_KINDS`), the Shell's bridge (`ACTION_KINDS` and the methods it
relays, web/js/core/bridge_methods.js) and the hostbridge's relay (`_surface_params.METHODS`)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

from lineup.facts.view_log import VIEW_LOG_LEVELS
from lineup.hostbridge import _surface_mcp as surface_mcp
from lineup.hostbridge._surface_params import APP_METHODS, METHODS
from lineup.sdk import protocol as sdk

ROOT: Final = Path(__file__).resolve().parents[2]
BRIDGE_METHODS: Final = ROOT / "hostbridge" / "web" / "js" / "core" / "bridge_methods.js"


def test_the_shells_action_kinds_are_the_sdks_surface_action_kinds() -> None:
    text = BRIDGE_METHODS.read_text()
    table = text.split("export const ACTION_KINDS = [", 1)[1].split("];", 1)[0]
    assert set(re.findall(r'"([a-z_.]+)"', table)) == sdk.SURFACE_ACTION_KINDS


def test_every_app_method_the_shell_relays_the_hostbridge_relays_to_focus() -> None:
    text = BRIDGE_METHODS.read_text()
    relayed = set(re.findall(r'"(lineup/[a-z/-]+)": \{[^}]*relay: true', text, re.S))
    assert set(APP_METHODS) <= relayed
    assert set(APP_METHODS) <= set(METHODS)


def test_a_surface_may_dispatch_no_conversation_action() -> None:
    assert sdk.SURFACE_ACTION_KINDS.isdisjoint(sdk.CONVERSATION_ACTION_KINDS)


def test_the_log_levels_the_shell_takes_are_the_facts_view_log_levels() -> None:
    text = BRIDGE_METHODS.read_text()
    table = text.split("export const LOG_LEVELS = [", 1)[1].split("];", 1)[0]
    assert tuple(re.findall(r'"([a-z]+)"', table)) == VIEW_LOG_LEVELS


def test_every_method_the_shell_relays_the_hostbridge_checks_again() -> None:
    text = BRIDGE_METHODS.read_text()
    relayed = set(re.findall(r'"([a-z/-]+)": \{\s*form: "request",\s*relay: true', text))
    assert {"resources/list", "resources/read", "ui/download-file"} <= relayed
    assert "ui/update-model-context" in relayed
    assert relayed <= set(METHODS)


def test_the_shells_mcp_request_bounds_are_the_hostbridges() -> None:
    text = BRIDGE_METHODS.read_text()
    bound = dict(re.findall(r"const (MAX_URI|MAX_DOWNLOAD_FILES) = (\d+);", text))
    assert {k: int(v) for k, v in bound.items()} == {
        "MAX_URI": surface_mcp.MAX_URI,
        "MAX_DOWNLOAD_FILES": surface_mcp.MAX_DOWNLOAD_FILES,
    }


def test_the_agent_message_types_and_page_the_shell_takes_are_the_sdks() -> None:
    text = BRIDGE_METHODS.read_text()
    table = text.split("export const AGENT_MESSAGE_TYPES = [", 1)[1].split("];", 1)[0]
    assert set(re.findall(r'"([a-z_.0-9]+)"', table)) == sdk.AGENT_MESSAGE_TYPES
    assert f"const MAX_LIST = {sdk.MAX_BATCH};" in text


def test_every_method_the_shell_relays_the_hostbridge_relays() -> None:
    text = BRIDGE_METHODS.read_text()
    relayed = set(re.findall(r'"(lineup/[a-z/-]+)": \{[^}]*relay: true', text, re.S))
    assert relayed == {m for m in METHODS if m.startswith("lineup/")}
