"""Draw-and-Guess through the SDK's testkit only: rounds won, lost and given up, the drawing as
a PNG, idempotent Surface events, a restarted process and a second round refused."""

from __future__ import annotations

import base64
import re
from typing import Any

from lineup.examples.draw_and_guess import DrawAndGuess
from lineup.examples.draw_and_guess._picture import MAX_INLINE_PNG
from lineup.examples.draw_and_guess._round import HEIGHT, WIDTH, WORDS
from lineup.sdk import protocol as p
from lineup.sdk import testkit
from lineup.sdk.testkit import CallRecord, FakeRuntime
from lineup.sdk.tools import dispatch_tool, tools_of
from lineup.tests.miniapps._png_decode import decode

INSTANCE = testkit.DEFAULT_INSTANCE
START = "draw-and-guess.start_round"
DRAWING = "draw-and-guess.get_drawing"
GUESS = "draw-and-guess.guess"
WHITE, PEN = "#ffffff", "#1f2328"


async def started(
    tries: int | None = None, runtime: FakeRuntime | None = None
) -> tuple[DrawAndGuess, FakeRuntime, CallRecord]:
    app = DrawAndGuess()
    runtime = await testkit.start(app, runtime=runtime)
    record = await testkit.call_tool(app, START, {} if tries is None else {"max_tries": tries})
    return app, runtime, record


def state(runtime: FakeRuntime, instance_id: str = INSTANCE) -> dict[str, Any]:
    surface = runtime.surfaces.by_instance[instance_id]
    return surface.state


def document(runtime: FakeRuntime) -> tuple[dict[str, Any], int]:
    data, revision = runtime.session_data.get(INSTANCE)
    assert data is not None
    return data, revision


def a_wrong_word(word: str) -> str:
    return next(w for w in WORDS if w != word)


async def draw(runtime: FakeRuntime, stroke_id: str, seq: int, points: list[float]) -> None:
    await runtime.send_surface_event(
        "stroke.add", {"stroke_id": stroke_id, "seq": seq, "points": points}
    )


async def redeliver(app: DrawAndGuess, runtime: FakeRuntime, record: CallRecord) -> None:
    """The runtime hands a restarted process a call it still holds (the SDK's pending calls)."""
    spec = tools_of(DrawAndGuess)[record.tool]
    await dispatch_tool(app, spec, record.call_id, record.tool, record.instance_id, {}, runtime)
    await runtime.settle()


# ------------------------------------------------------------------ the round


def words_of(value: Any) -> set[str]:
    """Every whole word in a JSON value's strings: "star" is not a word of "started"."""
    if isinstance(value, dict):
        return set().union(*(words_of(k) | words_of(v) for k, v in value.items()))
    if isinstance(value, list):
        return set().union(*(words_of(v) for v in value))
    return set(re.findall(r"[a-z]+", value.lower())) if isinstance(value, str) else set()


async def test_start_round_shows_a_word_of_its_list_in_the_surface_and_stays_running() -> None:
    _, runtime, record = await started()
    assert record.status == "running"
    shown = state(runtime)
    assert shown["word"] in WORDS
    assert (shown["phase"], shown["tries_left"], shown["guesses"]) == ("playing", 5, [])
    assert record.progress and shown["word"] not in words_of(record.progress)


async def test_no_word_of_the_list_is_given_away_by_start_rounds_progress() -> None:
    for word in WORDS:
        pinned = type("Pinned", (DrawAndGuess,), {"words": (word,)})()
        runtime = await testkit.start(pinned)
        record = await testkit.call_tool(pinned, START, {})
        assert state(runtime)["word"] == word
        assert record.progress and word not in words_of(record.progress)
    data, _ = document(runtime)
    assert data["round"]["call_id"] == record.call_id


async def test_a_round_won_after_a_wrong_guess_completes_start_round_once_and_closes() -> None:
    app, runtime, game = await started()
    word = state(runtime)["word"]
    wrong = await testkit.call_tool(app, GUESS, {"word": a_wrong_word(word)})
    assert wrong.result == {"correct": False, "tries_left": 4, "outcome": "playing"}
    assert state(runtime)["guesses"] == [{"word": a_wrong_word(word), "correct": False}]
    assert game.status == "running"
    right = await testkit.call_tool(app, GUESS, {"word": f"  {word.upper()} "})
    assert right.result == {"correct": True, "tries_left": 4, "outcome": "won"}
    assert game.result == {
        "word": word,
        "guesses": [a_wrong_word(word), word.upper()],
        "outcome": "won",
    }
    assert runtime.lifecycle.requests == [(INSTANCE, "close")]
    assert runtime.surfaces.of(INSTANCE) is None


async def test_a_word_of_two_parts_matches_without_its_spaces() -> None:
    app, runtime, game = await started()
    word = state(runtime)["word"]
    spaced = " ".join(word)  # "c a t"
    record = await testkit.call_tool(app, GUESS, {"word": spaced})
    assert record.result is not None and record.result["correct"] is True
    assert game.result is not None and game.result["outcome"] == "won"


async def test_a_round_is_lost_when_the_tries_are_used_up() -> None:
    app, runtime, game = await started(tries=2)
    word = state(runtime)["word"]
    others = [w for w in WORDS if w != word][:2]
    first = await testkit.call_tool(app, GUESS, {"word": others[0]})
    assert first.result == {"correct": False, "tries_left": 1, "outcome": "playing"}
    last = await testkit.call_tool(app, GUESS, {"word": others[1]})
    assert last.result == {"correct": False, "tries_left": 0, "outcome": "lost"}
    assert game.result == {"word": word, "guesses": others, "outcome": "lost"}
    assert runtime.lifecycle.requests == [(INSTANCE, "close")]


async def test_giving_up_in_the_surface_ends_the_round_and_a_guess_after_it_is_refused() -> None:
    app, runtime, game = await started()
    word = state(runtime)["word"]
    await runtime.send_surface_event("round.give_up")
    assert game.result == {"word": word, "guesses": [], "outcome": "gave_up"}
    assert runtime.lifecycle.requests == [(INSTANCE, "close")]
    late = await testkit.call_tool(app, GUESS, {"word": word})
    assert late.error_code == "round_not_running"


async def test_a_guess_without_a_round_fails_round_not_running() -> None:
    app = DrawAndGuess()
    await testkit.start(app)
    record = await testkit.call_tool(app, GUESS, {"word": "cat"})
    assert record.error_code == "round_not_running"
    drawing = await testkit.call_tool(app, DRAWING, {})
    assert drawing.error_code == "round_not_running"


async def test_guess_and_start_round_inputs_out_of_bounds_are_refused() -> None:
    app, _, _ = await started()
    for bad in ({"word": ""}, {"word": "x" * 41}, {}, {"word": "cat", "extra": 1}):
        record = await testkit.call_tool(app, GUESS, bad)
        assert record.error_code == "tool_input_invalid", bad
    for tries in (0, 11):
        record = await testkit.call_tool(app, START, {"max_tries": tries})
        assert record.error_code == "tool_input_invalid", tries


# ------------------------------------------------------------------ the drawing


async def test_get_drawing_returns_the_strokes_as_a_png_inline_and_as_the_app_s_artifact() -> None:
    app, runtime, _ = await started()
    await draw(runtime, "s1", 0, [100, 100, 300, 100])
    await draw(runtime, "s1", 1, [300, 300])
    await draw(runtime, "s2", 0, [700, 500])
    record = await testkit.call_tool(app, DRAWING, {})
    assert record.status == "completed" and record.result is not None
    result = record.result
    png = base64.b64decode(result["png_base64"])
    assert len(png) <= MAX_INLINE_PNG
    assert (result["width"], result["height"], result["strokes"]) == (WIDTH, HEIGHT, 2)
    image = decode(png)
    assert (image.width, image.height) == (WIDTH, HEIGHT)
    assert image.pixel(200, 100) == PEN  # the first batch
    assert image.pixel(300, 200) == PEN  # joined to the second batch of the same stroke
    assert image.pixel(700, 500) == PEN  # a dot
    assert image.pixel(200, 200) == WHITE
    info = runtime.artifacts.infos[result["artifact_id"]]
    assert (info.media_type, info.app_scope, info.instance_id) == (
        "image/png",
        "draw-and-guess",
        INSTANCE,
    )
    assert runtime.artifacts.contents[result["artifact_id"]] == png


async def test_an_empty_drawing_is_a_white_png() -> None:
    app, _, _ = await started()
    record = await testkit.call_tool(app, DRAWING, {})
    assert record.result is not None and record.result["strokes"] == 0
    image = decode(base64.b64decode(record.result["png_base64"]))
    assert {b for row in image.rows for b in row} == {0}


async def test_a_re_sent_batch_is_applied_once_and_writes_nothing() -> None:
    _, runtime, _ = await started()
    await draw(runtime, "s1", 0, [10, 10, 20, 20])
    data, revision = document(runtime)
    await draw(runtime, "s1", 0, [10, 10, 20, 20])
    assert document(runtime) == (data, revision)
    assert data["drawing"]["strokes"] == [{"id": "s1", "parts": [[0, [10, 10, 20, 20]]]}]
    assert data["applied"] == ["s1:0"]


async def test_a_late_batch_lands_in_its_place_and_points_are_clamped_to_the_canvas() -> None:
    _, runtime, _ = await started()
    await draw(runtime, "s1", 1, [5000, -3, 10.6, 20.2])
    await draw(runtime, "s1", 0, [1, 2])
    data, _ = document(runtime)
    assert data["drawing"]["strokes"] == [
        {"id": "s1", "parts": [[0, [1, 2]], [1, [WIDTH, 0, 11, 20]]]}
    ]


async def test_a_clear_empties_the_canvas_once_and_a_re_sent_old_batch_does_not_return() -> None:
    _, runtime, _ = await started()
    await draw(runtime, "s1", 0, [10, 10, 20, 20])
    await runtime.send_surface_event("drawing.clear", {"clear_id": "c1"})
    data, revision = document(runtime)
    assert data["drawing"]["strokes"] == []
    await runtime.send_surface_event("drawing.clear", {"clear_id": "c1"})
    await draw(runtime, "s1", 0, [10, 10, 20, 20])  # the Surface re-sent it late
    assert document(runtime) == (data, revision)


async def test_bad_and_oversized_batches_are_refused_with_their_code_in_the_document() -> None:
    _, runtime, _ = await started()
    await draw(runtime, "bad", 0, [1, 2, 3])  # an odd count of numbers
    await runtime.send_surface_event(
        "stroke.add", {"stroke_id": "nan", "seq": 0, "points": ["x", 1]}
    )
    await draw(runtime, "big", 0, [1, 1] * 257)  # over the points of one batch
    data, _ = document(runtime)
    assert data["refused"] == [
        {"key": "bad:0", "code": "invalid_arguments"},
        {"key": "nan:0", "code": "invalid_arguments"},
        {"key": "big:0", "code": "invalid_arguments"},
    ]
    assert data["drawing"]["strokes"] == []
    _, revision = document(runtime)
    await runtime.send_surface_event("stroke.add", {"seq": 0, "points": [1, 1]})  # no key
    await runtime.send_surface_event("stroke.add", {"stroke_id": "a b", "seq": 0, "points": [1, 1]})
    assert document(runtime)[1] == revision


async def test_strokes_after_the_round_ended_change_nothing() -> None:
    app, runtime, _ = await started()
    await runtime.send_surface_event("round.give_up")
    data, revision = document(runtime)
    event = p.SurfaceEvent(
        instance_id=INSTANCE,
        surface_id="lu:surface:" + INSTANCE,
        name="stroke.add",
        data={"stroke_id": "s1", "seq": 0, "points": [1, 1]},
    )
    await app.on_surface_event(event)
    assert document(runtime) == (data, revision)


# ------------------------------------------------------------------ restarts and a second round


async def test_a_restarted_process_handed_the_call_again_keeps_the_round_and_its_drawing() -> None:
    _, runtime, game = await started()
    word = state(runtime)["word"]
    await draw(runtime, "s1", 0, [10, 10, 20, 20])
    app = DrawAndGuess()  # a new process: the old one was killed
    await testkit.start(app, runtime=runtime)
    await redeliver(app, runtime, game)
    assert state(runtime)["word"] == word  # the same round, not a new word
    assert document(runtime)[0]["drawing"]["strokes"][0]["id"] == "s1"
    await draw(runtime, "s1", 1, [30, 30])
    record = await testkit.call_tool(app, GUESS, {"word": word})
    assert record.result == {"correct": True, "tries_left": 5, "outcome": "won"}
    assert game.result is not None and game.result["word"] == word


async def test_a_guess_told_again_answers_as_before_and_costs_no_second_try() -> None:
    _, runtime, game = await started()
    word = state(runtime)["word"]
    app = DrawAndGuess()
    await testkit.start(app, runtime=runtime)
    await redeliver(app, runtime, game)
    wrong = await testkit.call_tool(app, GUESS, {"word": a_wrong_word(word)})
    assert wrong.result == {"correct": False, "tries_left": 4, "outcome": "playing"}
    wrong.result = None  # the runtime never took that answer: it hands the call over again
    again = DrawAndGuess()
    await testkit.start(again, runtime=runtime)
    spec = tools_of(DrawAndGuess)[GUESS]
    await dispatch_tool(
        again, spec, wrong.call_id, GUESS, INSTANCE, {"word": a_wrong_word(word)}, runtime
    )
    assert wrong.result == {"correct": False, "tries_left": 4, "outcome": "playing"}
    assert len(document(runtime)[0]["round"]["guesses"]) == 1


async def test_a_round_that_ended_while_the_process_was_down_completes_its_call_then() -> None:
    _, runtime, game = await started()
    data, _ = document(runtime)
    data["round"]["outcome"] = "gave_up"  # written, then the process died before completing
    runtime.session_data.put(INSTANCE, data)
    app = DrawAndGuess()
    await testkit.start(app, runtime=runtime)
    await redeliver(app, runtime, game)
    assert game.result is not None and game.result["outcome"] == "gave_up"
    assert runtime.lifecycle.requests == [(INSTANCE, "close")]


async def test_a_second_start_round_while_one_is_played_is_refused_and_its_instance_closes() -> (
    None
):
    app, runtime, game = await started()
    runtime.instances.add("instance-2")
    runtime.instance_id = "instance-2"  # the runtime opened a new instance for the new call
    second = await testkit.call_tool(app, START, {})
    assert second.error_code == "round_already_running"
    assert runtime.lifecycle.requests == [("instance-2", "close")]
    runtime.instance_id = INSTANCE
    word = state(runtime)["word"]
    await testkit.call_tool(app, GUESS, {"word": word})
    assert game.result is not None and game.result["outcome"] == "won"


async def test_a_second_start_round_in_the_same_instance_is_refused_and_the_round_goes_on() -> None:
    app, runtime, game = await started()
    second = await testkit.call_tool(app, START, {})
    assert second.error_code == "round_already_running"
    assert runtime.lifecycle.requests == []
    assert game.status == "running" and state(runtime)["phase"] == "playing"


async def test_a_start_round_that_expires_closes_the_game() -> None:
    app, runtime, game = await started()
    await app.on_tool_cancelled(game.call_id, "operation_expired")
    assert runtime.lifecycle.requests == [(INSTANCE, "close")]
    record = await testkit.call_tool(app, GUESS, {"word": "cat"})
    assert record.error_code == "round_not_running"


async def test_a_refresh_opens_the_surface_again() -> None:
    app, runtime, _ = await started()
    word = state(runtime)["word"]
    runtime.surfaces.by_instance.clear()  # focus restarted and holds none
    await app.on_view_refresh()
    assert state(runtime)["word"] == word


async def test_opened_from_the_shell_with_no_round_it_says_so() -> None:
    app = DrawAndGuess()
    runtime = await testkit.start(app)
    await app.on_ui_event(p.UiEvent(instance_id=INSTANCE, event={"kind": p.UI_APP_OPENED}))
    assert state(runtime) == {"phase": "idle"}
    record = await testkit.call_tool(app, GUESS, {"word": "cat"})
    assert record.error_code == "round_not_running"
