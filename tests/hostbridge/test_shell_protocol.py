"""The Shell protocol's models: what they accept, what they refuse, and that the Shell's modules
(web/js/) speak exactly their tags."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, get_args

import pytest
from pydantic import ValidationError

import lineup.hostbridge
from lineup.facts import interactions
from lineup.facts.views import RUNTIME_KINDS_PREFIX, SURFACE_VIEW_KIND
from lineup.hostbridge import shell_protocol
from lineup.hostbridge._views import ENDED_STATES
from lineup.hostbridge.shell_protocol import (
    MAX_DRAFT_FIELDS,
    MAX_DRAFT_TEXT,
    MAX_ID,
    MAX_SHELL_FRAME,
    RUNTIME_TO_SHELL,
    SHELL_TO_RUNTIME,
    UI_EVENT_KINDS,
    InteractionAnswerFrame,
    InteractionDraftFrame,
    RuntimeStatus,
    ShellApps,
    ShellAppSessions,
    ShellDrafts,
    ShellHeartbeat,
    ShellHello,
    ShellInbound,
    ShellInstance,
    ShellInteractions,
    ShellItems,
    ShellNotice,
    ShellOutbound,
    ShellPage,
    ShellReady,
    ShellRuntime,
    ShellView,
    UiEventFrame,
    UiIntentFrame,
    UiOpenFrame,
    encode,
    refused_type,
)
from lineup.sdk import interactions as std

WEB_JS = Path(lineup.hostbridge.__file__).parent / "web" / "js"
SHELL_JS = "\n".join(p.read_text() for p in sorted(WEB_JS.rglob("*.js")))


def tags(union: Any) -> set[str]:
    return {model.model_fields["type"].default for model in get_args(get_args(union)[0])}


def ui_event(**event: Any) -> dict[str, Any]:
    return {"type": "ui.event", "app_scope": "chat", "instance_id": "chat", "event": event}


# ---------------------------------------------------------------------- Shell → runtime

# Every frame the Shell, the drill and the bench send, as they send it.
VALID = [
    ({"type": "shell.ready"}, ShellReady),
    (ui_event(kind="composer.submit", text="hi", client_id="3f2b-…"), UiEventFrame),
    (ui_event(kind="composer.submit", text="no client id"), UiEventFrame),
    (ui_event(kind="message.retry", message_id="user-1"), UiEventFrame),
    (ui_event(kind="task.finish"), UiEventFrame),
    (ui_event(kind="task.close"), UiEventFrame),
    (ui_event(kind="timeline.earlier", before_order=12, before_id="m-12"), UiEventFrame),
    (ui_event(kind="mode.switch", mode="audio"), UiEventFrame),
    ({"type": "ui.event", "instance_id": "chat", "event": {"kind": "task.close"}}, UiEventFrame),
    ({"type": "ui.intent", "intent": "focus", "instance_id": "task-1"}, UiIntentFrame),
    ({"type": "ui.intent", "intent": "close", "instance_id": "task-1"}, UiIntentFrame),
    ({"type": "ui.open", "app_scope": "whiteboard"}, UiOpenFrame),
    (
        {"type": "interaction.answer", "interaction_id": "i-1", "answer": {"approved": True}},
        InteractionAnswerFrame,
    ),
    (
        {"type": "interaction.answer", "interaction_id": "i-1", "answer": {"values": {"n": 3}}},
        InteractionAnswerFrame,
    ),
    (
        {"type": "interaction.draft", "interaction_id": "i-1", "values": {"a": "x", "n": "4"}},
        InteractionDraftFrame,
    ),
]


@pytest.mark.parametrize(("frame", "model"), VALID)
def test_every_frame_the_shell_sends_parses_to_its_model(
    frame: dict[str, Any], model: type
) -> None:
    parsed = SHELL_TO_RUNTIME.validate_json(json.dumps(frame))
    assert type(parsed) is model
    assert parsed.model_dump(exclude_unset=True) == frame


def test_an_event_is_handed_on_with_exactly_the_fields_the_shell_set() -> None:
    parsed = SHELL_TO_RUNTIME.validate_json(json.dumps(ui_event(kind="composer.submit", text="x")))
    assert isinstance(parsed, UiEventFrame)
    assert parsed.event.model_dump(exclude_unset=True) == {"kind": "composer.submit", "text": "x"}


def test_the_ui_event_kinds_are_those_of_the_event_models() -> None:
    assert {
        "composer.submit",
        "message.retry",
        "task.finish",
        "task.close",
        "mode.switch",
        "timeline.earlier",
        "card.action",
    } == UI_EVENT_KINDS


LONG_ID = "i" * (MAX_ID + 1)

# (why, frame text, the type its audit row names)
REFUSED = [
    ("not JSON", "{not json", None),
    ("not an object", "[1, 2]", None),
    ("no type", '{"instance_id": "chat"}', None),
    ("a type that is not a string", '{"type": ["ui.event"]}', None),
    ("an unknown type", '{"type": "ui.explode"}', "ui.explode"),
    ("a type too long to be a tag", json.dumps({"type": "x" * 65}), None),
    ("a type that is no tag", json.dumps({"type": "ui event\n"}), None),
    ("nested past any sense", "[" * 5000 + "]" * 5000, None),
    ("an unknown field on shell.ready", '{"type": "shell.ready", "token": "t"}', "shell.ready"),
    ("a mode the chat has not", json.dumps(ui_event(kind="mode.switch", mode="3d")), "ui.event"),
    (
        "an unknown field on ui.event",
        json.dumps({**ui_event(kind="task.close"), "x": 1}),
        "ui.event",
    ),
    ("an unknown field in an event", json.dumps(ui_event(kind="task.close", x=1)), "ui.event"),
    ("an unknown event kind", json.dumps(ui_event(kind="task.progress")), "ui.event"),
    ("an app scope that is no scope", '{"type": "ui.open", "app_scope": "<b>"}', "ui.open"),
    ("an open without an app", '{"type": "ui.open"}', "ui.open"),
    ("an event without a kind", json.dumps(ui_event(text="hi")), "ui.event"),
    ("an event that is not an object", json.dumps({**ui_event(), "event": "x"}), "ui.event"),
    ("no instance", json.dumps({"type": "ui.event", "event": {"kind": "task.close"}}), "ui.event"),
    (
        "an empty instance id",
        json.dumps({**ui_event(kind="task.close"), "instance_id": ""}),
        "ui.event",
    ),
    (
        "an instance id too long",
        json.dumps({**ui_event(kind="task.close"), "instance_id": LONG_ID}),
        "ui.event",
    ),
    (
        "an instance id that is not a string",
        json.dumps({**ui_event(kind="task.close"), "instance_id": 7}),
        "ui.event",
    ),
    (
        "an app scope too long",
        json.dumps({**ui_event(kind="task.close"), "app_scope": "a" * 101}),
        "ui.event",
    ),
    (
        "a text too long",
        json.dumps(ui_event(kind="composer.submit", text="x" * (MAX_SHELL_FRAME + 1))),
        "ui.event",
    ),
    ("a submit without text", json.dumps(ui_event(kind="composer.submit")), "ui.event"),
    (
        "a client id too long",
        json.dumps(ui_event(kind="composer.submit", text="x", client_id=LONG_ID)),
        "ui.event",
    ),
    ("a retry without a message", json.dumps(ui_event(kind="message.retry")), "ui.event"),
    (
        "an earlier page before no item",
        json.dumps(ui_event(kind="timeline.earlier", before_order=3)),
        "ui.event",
    ),
    (
        "an earlier page before an order no Shell reads back",
        json.dumps(ui_event(kind="timeline.earlier", before_order=2**53, before_id="m")),
        "ui.event",
    ),
    (
        "a retry of a message id too long",
        json.dumps(ui_event(kind="message.retry", message_id=LONG_ID)),
        "ui.event",
    ),
    (
        "an unknown intent",
        json.dumps({"type": "ui.intent", "intent": "kill", "instance_id": "t"}),
        "ui.intent",
    ),
    (
        "an intent without an instance",
        json.dumps({"type": "ui.intent", "intent": "focus"}),
        "ui.intent",
    ),
    (
        "an unknown field on ui.intent",
        json.dumps({"type": "ui.intent", "intent": "close", "instance_id": "t", "all": True}),
        "ui.intent",
    ),
    (
        "an answer naming more than the interaction",
        json.dumps(
            {"type": "interaction.answer", "interaction_id": "i", "answer": {}, "call_id": "c"}
        ),
        "interaction.answer",
    ),
    (
        "an answer without an interaction",
        json.dumps({"type": "interaction.answer", "answer": {"approved": True}}),
        "interaction.answer",
    ),
    (
        "a draft with more fields than an input has",
        json.dumps(
            {
                "type": "interaction.draft",
                "interaction_id": "i",
                "values": {f"f{n}": "x" for n in range(MAX_DRAFT_FIELDS + 1)},
            }
        ),
        "interaction.draft",
    ),
    (
        "a draft value that is neither text nor a number",
        json.dumps({"type": "interaction.draft", "interaction_id": "i", "values": {"a": [1]}}),
        "interaction.draft",
    ),
]


@pytest.mark.parametrize(("why", "text", "audited_type"), REFUSED, ids=[r[0] for r in REFUSED])
def test_a_frame_outside_the_protocol_is_refused_and_named_only_by_a_short_type(
    why: str, text: str, audited_type: str | None
) -> None:
    with pytest.raises(ValidationError) as refused:
        SHELL_TO_RUNTIME.validate_json(text)
    assert refused_type(refused.value) == audited_type


def test_shell_frames_are_immutable() -> None:
    frame = UiIntentFrame(intent="focus", instance_id="t")
    with pytest.raises(ValidationError):
        frame.instance_id = "other"  # type: ignore[misc]  # frozen: the refusal under test


# ---------------------------------------------------------------------- runtime → Shell

OUTBOUND: list[ShellOutbound] = [
    ShellHello(runtime=RuntimeStatus(state="online")),
    ShellRuntime(state="reconnecting", reason="appserver_timeout"),
    ShellApps(
        foreground="chat",
        instances=(
            ShellInstance(instance_id="chat", app_scope="chat", state="foreground", title="Chat"),
        ),
    ),
    ShellView(app_scope="chat", instance_id="chat", view={"kind": "chat.timeline"}),
    ShellItems(
        app_scope="chat",
        instance_id="chat",
        items=({"id": "m1", "order": 1, "author": "agent", "tree": [{"t": "text", "v": "hi"}]},),
    ),
    ShellPage(instance_id="chat", more=True),
    ShellNotice(level="error", text="That could not be done (actor_restarted)."),
    ShellInteractions(interactions=({"interaction_id": "i-1", "kind": "confirm"},)),
    ShellAppSessions(sessions=({"app_session_id": "lu:app_session:t", "state": "open"},)),
    ShellDrafts(drafts={"i-1": {"name": "Ada", "n": 3.0}}),
    ShellHeartbeat(),
]


@pytest.mark.parametrize("frame", OUTBOUND, ids=[f.type for f in OUTBOUND])
def test_every_runtime_frame_encodes_to_what_the_union_reads_back(frame: ShellOutbound) -> None:
    text = encode(frame)
    assert RUNTIME_TO_SHELL.validate_json(text) == frame
    assert json.loads(text)["type"] == frame.type


def test_a_runtime_frame_keeps_an_absent_reason_as_null() -> None:
    assert json.loads(encode(ShellRuntime(state="online"))) == {
        "type": "shell.runtime",
        "state": "online",
        "reason": None,
    }


@pytest.mark.parametrize(
    "build",
    [
        lambda: ShellNotice(level="warning", text="x"),
        lambda: ShellNotice(level="info", text=""),
        lambda: ShellApps(foreground=LONG_ID, instances=()),
        lambda: ShellInstance.model_validate(
            {"instance_id": "t", "app_scope": "a", "state": "background", "title": "T", "pid": 1}
        ),
        lambda: ShellView(app_scope="chat", instance_id="", view={}),
        lambda: ShellRuntime(state="x" * 65),
    ],
    ids=["level", "empty-notice", "long-foreground", "unknown-field", "empty-id", "long-state"],
)
def test_a_runtime_frame_outside_the_protocol_cannot_be_built(build: Any) -> None:
    with pytest.raises(ValidationError):
        build()


# ---------------------------------------------------------------------- the Shell's modules


def _frame_switch(js: str) -> str:
    """The body of `receive`'s `switch (frame.type)`: the frames the Shell handles."""
    start = js.index("switch (frame.type) {")
    return js[start : js.index("default:", start)]


def test_shell_js_sends_only_the_protocols_frames_and_every_one_of_them() -> None:
    sent = set(re.findall(r'send\(\{\s*type:\s*"([^"]+)"', SHELL_JS))
    assert sent == tags(ShellInbound)


def test_shell_js_handles_every_runtime_frame_and_no_other() -> None:
    handled = set(re.findall(r'case "([^"]+)":', _frame_switch(SHELL_JS)))
    assert handled == tags(ShellOutbound)


def test_shell_js_sends_only_the_protocols_event_kinds_and_every_one_of_them() -> None:
    # Inline (`kind: "composer.submit"`) or through the Task Dashboard's action table
    # (`event: "task.finish"`, sent as `{ kind: action.event }`).
    kinds = set(re.findall(r'\bkind:\s*"([^"]+)"', SHELL_JS))
    kinds |= set(re.findall(r'\bevent:\s*"([^"]+)"', SHELL_JS))
    assert kinds == UI_EVENT_KINDS


def test_shell_js_sends_only_the_protocols_intents_and_every_one_of_them() -> None:
    intents = set(re.findall(r'\bintent:\s*"([^"]+)"', SHELL_JS))
    assert intents == set(get_args(UiIntentFrame.model_fields["intent"].annotation))


def test_the_shells_final_interaction_states_are_the_machines() -> None:
    # The Shell cannot import the facts: its one copy of them is compared here.
    state_js = (WEB_JS / "core" / "state.js").read_text()
    found = re.search(r"export const FINAL_STATES = new Set\(\[([^\]]*)\]\);", state_js)
    assert found is not None
    assert set(re.findall(r'"([a-z_]+)"', found.group(1))) == set(interactions.FINAL)


def test_the_shell_draws_the_runtimes_one_view_kind_it_draws_itself_a_surface() -> None:
    # The Shell cannot import the facts: its one copy of the Surface's view kind is here.
    main_js = (WEB_JS / "main.js").read_text()
    registered = set(re.findall(r'^register\("([^"]+)", ', main_js, re.MULTILINE))
    assert {kind for kind in registered if kind.startswith(RUNTIME_KINDS_PREFIX)} == {
        SURFACE_VIEW_KIND
    }


def test_a_drafts_bounds_are_those_of_the_input_it_is_for() -> None:
    # The Shell protocol imports pydantic only, so it holds its own copy of the input's bounds.
    assert MAX_DRAFT_FIELDS == std.MAX_FIELDS
    assert MAX_DRAFT_TEXT == std.MAX_TEXTAREA


def test_the_shells_ended_instance_states_are_the_lifecycles_not_live_ones() -> None:
    # The Shell's copy, compared with the hostbridge's (which the lifecycle's table defines).
    state_js = (WEB_JS / "core" / "state.js").read_text()
    found = re.search(r"const ENDED_STATES = new Set\(\[([^\]]*)\]\);", state_js)
    assert found is not None
    assert set(re.findall(r'"([a-z_]+)"', found.group(1))) == set(ENDED_STATES)
    assert {"stopping", "stopped", "failed"} == ENDED_STATES


def test_the_shells_socket_subprotocols_are_the_hostbridges() -> None:
    # The Shell's copy of the names it offers its token under (never in the socket's URL).
    connection_js = (WEB_JS / "core" / "connection.js").read_text()
    found = dict(re.findall(r'export const (\w+_SUBPROTOCOL) = "([^"]+)";', connection_js))
    assert found == {
        "SHELL_SUBPROTOCOL": shell_protocol.SHELL_SUBPROTOCOL,
        "TOKEN_SUBPROTOCOL": shell_protocol.TOKEN_SUBPROTOCOL,
    }
    assert "?token=" not in connection_js
