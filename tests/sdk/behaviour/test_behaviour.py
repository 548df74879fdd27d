"""The SDK's behaviour, written once and run on the testkit's fake and on a real runtime: an
app's calls, refusals, session data, views and interactions end the same way on both, so the
fake an author tests against cannot drift from the runtime the app will meet.

Call ids are unique across the module: the real runtime serves all its tests. Each call of the
app's launch tools gets an instance of its own, `behave:<call id>`, on both harnesses.

Where the two still differ, and so nothing here checks it yet: the conversation's history (the
runtime files an Agent's text for the app there as well as in its inbox; the fake keeps the
two apart), `apps.open` (the fake has no answer for it), a user's answer to a capability
prompt, and progress reports close together (the runtime keeps the latest of a window).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from lineup.actors.focus._views import MAX_VIEW_KEYS
from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.actors.store._fields import MAX_JSON_DEPTH, MAX_SESSION_DATA_BYTES
from lineup.sdk import protocol as p
from lineup.tests.support.behaviour_app import OK
from lineup.tests.support.sdk_harness import Harness, Outcome

STALE = ErrorCode.STALE_REVISION.value
INVALID = ErrorCode.INVALID_ARGUMENTS.value
FINAL = ErrorCode.CALL_ALREADY_FINAL.value


def result_of(outcome: Outcome) -> dict[str, Any]:
    assert outcome.code is None, outcome
    assert outcome.result is not None
    return outcome.result


async def test_a_tool_call_completes_with_its_result(harness: Harness) -> None:
    assert await harness.call("behave.echo", {"text": "hi"}, "echo-1") == Outcome({"text": "hi"})


async def test_an_app_learns_its_scope_instance_state_and_mode_from_the_runtime(
    harness: Harness,
) -> None:
    result = result_of(await harness.call("behave.run", {"mode": "context"}, "context-1"))
    # A launch brings its instance forward.
    assert json.loads(result["data"]) == ["behave", "behave:context-1", "foreground", "app"]


@pytest.mark.parametrize(
    ("call_id", "arguments"),
    [
        ("input-type", {"text": 5}),
        ("input-missing", {}),
        ("input-extra", {"text": "hi", "more": 1}),
        ("input-long", {"text": "x" * 101}),
    ],
)
async def test_input_its_schema_refuses_is_tool_input_invalid(
    harness: Harness, call_id: str, arguments: dict[str, Any]
) -> None:
    outcome = await harness.call("behave.echo", arguments, call_id)
    assert outcome == Outcome(code=ErrorCode.TOOL_INPUT_INVALID.value)


@pytest.mark.parametrize(
    ("mode", "code"),
    [
        ("fail", "out_of_paper"),  # the app's own code
        ("cancel", "not_today"),  # the app's reason
        ("raise", ErrorCode.HANDLER_FAILED.value),
    ],
)
async def test_a_call_the_app_fails_cancels_or_breaks_ends_with_its_code(
    harness: Harness, mode: str, code: str
) -> None:
    outcome = await harness.call("behave.run", {"mode": mode}, f"end-{mode}")
    assert outcome == Outcome(code=code, progress=({"step": 1},))


async def test_a_tool_the_app_does_not_declare_is_tool_not_advertised(harness: Harness) -> None:
    outcome = await harness.call("behave.nothing", {}, "undeclared-1")
    assert outcome == Outcome(code=ErrorCode.TOOL_NOT_ADVERTISED.value)


async def test_a_result_its_output_schema_refuses_is_refused_and_the_call_stays_open(
    harness: Harness,
) -> None:
    result = result_of(await harness.call("behave.run", {"mode": "bad_output"}, "output-1"))
    assert result["codes"] == [ErrorCode.TOOL_OUTPUT_INVALID.value]  # then its valid one won


async def test_a_second_terminal_result_for_one_call_is_call_already_final(
    harness: Harness,
) -> None:
    result = result_of(await harness.call("behave.run", {"mode": "twice"}, "twice-1"))
    assert result["codes"] == []  # the first result is the one the Agent got
    view = await harness.view(result["instance_id"], lambda v: "after_final" in v)
    assert view["after_final"] == [FINAL, FINAL]  # a second complete, then a fail


async def test_session_data_is_written_by_compare_and_set_of_its_revision(
    harness: Harness,
) -> None:
    result = result_of(await harness.call("behave.run", {"mode": "session"}, "session-1"))
    # At revision 0 (never written); a write at a stale revision is refused; the retry of the
    # write that was applied finds it one revision on; a write at the new revision goes on.
    assert result["codes"] == [OK, STALE, OK, OK]
    assert result["revisions"] == [0, 1, 1, 2, 2]
    assert json.loads(result["data"]) == [None, {"n": 3}]


async def test_session_data_past_the_stores_bounds_is_invalid_arguments(harness: Harness) -> None:
    arguments = {
        "mode": "session_bounds",
        "sizes": [MAX_SESSION_DATA_BYTES, MAX_SESSION_DATA_BYTES + 1],
        "depths": [MAX_JSON_DEPTH, MAX_JSON_DEPTH + 1],
    }
    result = result_of(await harness.call("behave.run", arguments, "session-bounds-1"))
    assert result["codes"] == [OK, INVALID, OK, INVALID]


async def test_a_rendered_view_is_the_one_the_user_is_shown(harness: Harness) -> None:
    result = result_of(await harness.call("behave.run", {"mode": "render"}, "render-1"))
    view = await harness.view(result["instance_id"], lambda v: v.get("shown") == "render-1")
    assert view == {"kind": "behave", "shown": "render-1"}


async def test_a_view_past_focus_bounds_is_refused_and_one_at_them_is_taken(
    harness: Harness,
) -> None:
    arguments = {
        "mode": "render_bounds",
        "keys": [MAX_VIEW_KEYS, MAX_VIEW_KEYS + 1],
        "sizes": [p.MAX_VIEW_BYTES, p.MAX_VIEW_BYTES + 1],
    }
    result = result_of(await harness.call("behave.run", arguments, "render-bounds-1"))
    assert result["codes"] == [OK, INVALID, OK, INVALID]


async def test_an_apps_question_is_answered_once_checked_and_told_to_the_app(
    harness: Harness,
) -> None:
    result = result_of(await harness.call("behave.run", {"mode": "ask"}, "ask-1"))
    interaction_id = result["interaction_id"]
    with pytest.raises(LineUpError) as refused:
        await harness.answer(interaction_id, {"approved": "yes"})
    assert refused.value.code is ErrorCode.ANSWER_INVALID

    first = await harness.answer(interaction_id, {"approved": True})
    assert (first.changed, first.state, first.result) == (True, "submitted", {"approved": True})
    again = await harness.answer(interaction_id, {"approved": False})
    # Told to the app, the answer is delivered: the interaction is settled.
    assert (again.changed, again.state, again.result) == (False, "completed", {"approved": True})

    view = await harness.view(result["instance_id"], lambda v: bool(v.get("told")))
    assert view["told"] == [{"state": "submitted", "result": {"approved": True}}]


async def test_the_users_text_and_the_registry_are_reserved_to_the_chat_and_the_app_registry(
    harness: Harness,
) -> None:
    result = result_of(await harness.call("behave.run", {"mode": "say"}, "say-1"))
    denied = ErrorCode.PERMISSION_DENIED.value
    assert result["codes"] == [denied, denied]


async def test_an_instance_closed_has_no_view_and_no_session_data_any_more(
    harness: Harness,
) -> None:
    opened = result_of(await harness.call("behave.run", {"mode": "render"}, "closed-1"))
    assert opened["instance_id"] == "behave:closed-1"
    arguments = {"mode": "close_other", "other": opened["instance_id"]}
    result = result_of(await harness.call("behave.run", arguments, "closer-1"))
    missing = ErrorCode.APP_INSTANCE_NOT_FOUND.value
    # Closed once; then its view, its session data (read or written) and a second close are
    # refused as for an instance that is gone.
    assert result["codes"] == [OK, missing, missing, missing, missing]


async def test_an_artifact_is_made_once_per_request_and_read_back_and_bad_ones_are_refused(
    harness: Harness,
) -> None:
    result = result_of(await harness.call("behave.run", {"mode": "artifacts"}, "artifacts-1"))
    assert result["same"] is True
    invalid = ErrorCode.ARTIFACT_INVALID.value
    assert result["codes"] == [ErrorCode.ARTIFACT_NOT_FOUND.value, invalid, invalid, invalid]


async def test_a_surface_opens_once_patches_by_revision_and_closes_once(harness: Harness) -> None:
    result = result_of(await harness.call("behave.run", {"mode": "surface"}, "surface-1"))
    surface_id = "lu:surface:behave:surface-1"  # named after its instance
    assert json.loads(result["data"]) == [
        [surface_id, "board", 0, True, True],  # opened
        [surface_id, "board", 0, True, False],  # open already: as it is
        [surface_id, "board", 1, True, True],  # patched: one revision on
        [surface_id, "board", 1, False, True],  # closed
        [surface_id, "board", 1, False, False],  # closed already
    ]
    assert result["codes"] == [
        ErrorCode.SURFACE_NOT_FOUND.value,  # patched once closed
        ErrorCode.SURFACE_UNAVAILABLE.value,  # an entrypoint the manifest lacks
    ]


async def test_a_subscriber_hears_the_snapshot_then_each_revision_once_in_order(
    harness: Harness,
) -> None:
    result = result_of(await harness.call("behave.run", {"mode": "subscribe"}, "subscribe-1"))
    view = await harness.view(result["instance_id"], lambda v: len(v.get("heard", [])) >= 3)
    assert view["heard"] == [[0, None], [1, {"n": 1}], [2, {"n": 2}]]


async def test_an_apps_question_is_withdrawn_once_and_another_is_not_found(
    harness: Harness,
) -> None:
    result = result_of(await harness.call("behave.run", {"mode": "withdraw"}, "withdraw-1"))
    assert json.loads(result["data"]) == [
        [True, "cancelled", "cancelled_by_app"],
        [False, "cancelled"],  # it had its end already
        ["cancelled", "cancelled_by_app"],
    ]
    assert result["codes"] == [ErrorCode.INTERACTION_NOT_FOUND.value]


async def test_a_question_tied_to_a_call_that_has_its_result_is_call_already_final(
    harness: Harness,
) -> None:
    result = result_of(await harness.call("behave.run", {"mode": "ask_parent"}, "parent-1"))
    view = await harness.view(result["instance_id"], lambda v: "asked" in v)
    assert view["asked"] == [OK, FINAL]


async def test_the_gateway_refuses_before_asking_anyone_alike(harness: Harness) -> None:
    arguments = {"mode": "capabilities"}
    result = result_of(await harness.call("behave.run", arguments, "capabilities-1"))
    assert json.loads(result["data"]) == [
        ["file.open", "permission_denied", ErrorCode.CAPABILITY_DENIED.value, None],
        ["notification.show", "failed", INVALID, None],
        ["notification.show", "failed", ErrorCode.APP_INSTANCE_NOT_FOUND.value, None],
        ["file.open", "permission_denied", ErrorCode.CAPABILITY_DENIED.value, None],  # a repeat
    ]


async def test_only_the_app_that_ships_a_trusted_component_may_use_it(harness: Harness) -> None:
    result = result_of(await harness.call("behave.run", {"mode": "trust"}, "trust-1"))
    denied = ErrorCode.PERMISSION_DENIED.value
    assert result["codes"] == [denied, denied, denied, denied, OK]


async def test_an_instance_lists_and_acknowledges_only_its_own_deliveries(
    harness: Harness,
) -> None:
    """Seed 003 §3.1: what the Agent addressed to another instance, or to no instance (the
    app's conversation-level inbox), is not this instance's to acknowledge."""
    await harness.deliver(
        [("in-own", "behave:inbox-1"), ("in-other", "behave:inbox-x"), ("in-app", None)]
    )
    arguments = {"mode": "inbox", "other": "behave:inbox-x"}
    result = result_of(await harness.call("behave.run", arguments, "inbox-1"))
    assert json.loads(result["data"]) == {
        "before": {"own": ["in-own"], "other": ["in-other"], "app": ["in-app"]},
        "acks": {"in-app": False, "in-other": False, "in-own": True},
        "after": {"own": [], "other": ["in-other"], "app": ["in-app"]},
    }
