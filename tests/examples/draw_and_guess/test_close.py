"""Draw-and-Guess asked to close (`app.close_requested`, issue 28 item 6), through the SDK's
testkit: with no round in play it closes at once; with one it asks the user first, once, and
only an approval closes it; a round that ends meanwhile withdraws the question."""

from __future__ import annotations

from lineup.examples.draw_and_guess import DrawAndGuess
from lineup.sdk import protocol as p
from lineup.sdk import testkit
from lineup.sdk.manifest import CLOSE_REQUESTS_FEATURE
from lineup.sdk.testkit import FakeRuntime
from lineup.sdk.tools import manifest_of

from .test_app import GUESS, INSTANCE, started, state

CLOSE = p.UiEvent(instance_id=INSTANCE, event={"kind": p.UI_CLOSE_REQUESTED})


def asked(runtime: FakeRuntime) -> p.InteractionRecord:
    record = runtime.interactions.last
    assert record is not None
    return record


def test_the_game_declares_that_it_asks_before_a_close() -> None:
    assert CLOSE_REQUESTS_FEATURE in manifest_of(DrawAndGuess).runtime_sdk.optional_features


async def test_with_no_round_in_play_a_close_request_closes_at_once() -> None:
    app = DrawAndGuess()
    runtime = await testkit.start(app)
    await app.on_ui_event(p.UiEvent(instance_id=INSTANCE, event={"kind": p.UI_APP_OPENED}))
    await app.on_ui_event(CLOSE)
    assert runtime.lifecycle.requests == [(INSTANCE, "close")]
    assert runtime.interactions.last is None


async def test_a_round_in_play_asks_first_and_cancelling_keeps_it_playing() -> None:
    app, runtime, game = await started()
    await app.on_ui_event(CLOSE)
    question = asked(runtime)
    assert (question.kind, question.instance_id, question.parent_call_id) == (
        "confirm",
        INSTANCE,
        game.call_id,
    )
    assert runtime.lifecycle.requests == [(INSTANCE, "foreground")]  # where the question is
    await app.on_ui_event(CLOSE)  # a second close while it asks: nothing more is asked
    assert asked(runtime).interaction_id == question.interaction_id
    runtime.interactions.answer(question.interaction_id, {"approved": False})
    await runtime.settle()
    assert (INSTANCE, "close") not in runtime.lifecycle.requests
    assert state(runtime)["phase"] == "playing"
    assert game.result is None and game.error_code is None
    guess = await testkit.call_tool(app, GUESS, {"word": "not the word at all"})
    assert guess.result is not None and guess.result["outcome"] == "playing"


async def test_an_approved_close_closes_the_game() -> None:
    app, runtime, _ = await started()
    await app.on_ui_event(CLOSE)
    runtime.interactions.answer(asked(runtime).interaction_id, {"approved": True})
    await runtime.settle()
    assert runtime.lifecycle.requests[-1] == (INSTANCE, "close")


async def test_a_round_that_ends_while_the_question_is_open_withdraws_it() -> None:
    app, runtime, game = await started()
    await app.on_ui_event(CLOSE)
    question = asked(runtime)
    word = state(runtime)["word"]
    await testkit.call_tool(app, GUESS, {"word": word})
    assert game.result is not None and game.result["outcome"] == "won"
    assert not runtime.interactions.records[question.interaction_id].is_open
