from __future__ import annotations

from typing import Any

from lineup import wire
from lineup.ops.agent._commands import Commands
from lineup.ops.agent._play import (
    DRAWING,
    GUESS,
    INSTALL_HINT,
    MAX_POLLS,
    START,
    WORDS,
    Game,
    Step,
    Tick,
)
from lineup.ops.agent._tour import Ask, Say

CONV = "conv-a"
GAME_TOOLS = [
    {"method": START, "handling": "launch"},
    {"method": DRAWING, "handling": "direct"},
    {"method": GUESS, "handling": "operation"},
]


def _message(kind: str, payload: dict[str, Any], **header: Any) -> dict[str, Any]:
    return {"type": kind, "conversation_id": CONV, "payload": payload, **header}


def _commands(tools: list[dict[str, Any]] = GAME_TOOLS) -> Commands:
    commands = Commands(game=Game(poll_s=0.5))
    commands.take(_message(wire.INVENTORY, {"revision": "3", "tools": tools}))
    return commands


def _play(commands: Commands, message_id: str = "u-1") -> list[Step]:
    text = {"markdown": "/play draw-and-guess"}
    moves = commands.take(_message(wire.TEXT, text, id=message_id, sender={"kind": "user"}))
    assert moves is not None
    return moves


def _only(moves: list[Step], kind: type) -> Any:
    (found,) = [m for m in moves if isinstance(m, kind)]
    return found


def _says(moves: list[Step] | None) -> list[str]:
    assert moves is not None
    return [m.markdown for m in moves if isinstance(m, Say)]


def _drawing(call_id: str, strokes: int, png: str = "iVBOR") -> dict[str, Any]:
    result = {"artifact_id": "a", "png_base64": png, "width": 8, "height": 8, "strokes": strokes}
    return _message(wire.RESULT, {"call_id": call_id, "result": result})


def _look(commands: Commands, tick: Tick, strokes: int, png: str = "iVBOR") -> list[Step]:
    """Fire `tick`, and answer its get_drawing with a drawing."""
    ask = _only(commands.tick(tick), Ask)
    assert (ask.tool, ask.input, ask.call_id, ask.revision) == (DRAWING, {}, tick.call_id, "3")
    return commands.take(_drawing(ask.call_id, strokes, png)) or []


def _answer(commands: Commands, guess: Ask, **result: Any) -> list[Step]:
    return commands.take(_message(wire.RESULT, {"call_id": guess.call_id, "result": result})) or []


def test_play_without_the_game_installed_says_how_to_install_it() -> None:
    commands = _commands(tools=[{"method": "interaction.choice"}])
    assert _says(_play(commands)) == [INSTALL_HINT]
    other = commands.take(
        _message(wire.TEXT, {"markdown": "/play chess"}, id="u-2", sender={"kind": "user"})
    )
    assert _says(other) == ["I can play `draw-and-guess`: write `/play draw-and-guess`."]


def test_a_round_starts_then_guesses_the_next_word_each_time_the_drawing_changes() -> None:
    commands = _commands()
    moves = _play(commands)
    start = _only(moves, Ask)
    assert (start.tool, start.input, start.revision) == (START, {}, "3")
    tick = _only(moves, Tick)
    assert tick.delay_s == 0.5

    empty = _look(commands, tick, strokes=0)  # nothing drawn yet: just look again
    assert _says(empty) == []
    drawn = _look(commands, _only(empty, Tick), strokes=2)
    guess = _only(drawn, Ask)
    assert (guess.tool, guess.input) == (GUESS, {"word": WORDS[0]})
    assert _says(drawn) == [f"I see 2 strokes: I guess **{WORDS[0]}**."]
    assert not [m for m in drawn if isinstance(m, Tick)]  # one call in flight at a time

    wrong = _answer(commands, guess, correct=False, tries_left=4, outcome="playing")
    assert _says(wrong) == [f"Not **{WORDS[0]}**: 4 tries left."]
    same = _look(commands, _only(wrong, Tick), strokes=2)  # unchanged: no guess
    assert not [m for m in same if isinstance(m, Ask)]
    changed = _look(commands, _only(same, Tick), strokes=3, png="iVBORw")
    second = _only(changed, Ask)
    assert second.input == {"word": WORDS[1]}

    right = _answer(commands, second, correct=True, tries_left=3, outcome="won")
    assert _says(right) == [f"**{WORDS[1]}** is right!"]
    assert not [m for m in right if isinstance(m, Tick)]  # the round is over: no more looks

    outcome = {"word": WORDS[1], "guesses": list(WORDS[:2]), "outcome": "won"}
    ended = commands.take(_message(wire.RESULT, {"call_id": start.call_id, "result": outcome}))
    assert _says(ended) == [
        f"The round is over: **won**. The word was **{WORDS[1]}**; the guesses: "
        f"{WORDS[0]}, {WORDS[1]}."
    ]
    assert commands.game.rounds == {}
    assert _says(_play(commands, "u-2"))[0].startswith("Starting a round")  # and again


def test_the_start_calls_result_ends_the_round_and_a_pending_tick_does_nothing() -> None:
    commands = _commands()
    moves = _play(commands)
    start, tick = _only(moves, Ask), _only(moves, Tick)
    gave_up = {"word": "cat", "guesses": [], "outcome": "gave_up"}
    ended = commands.take(_message(wire.RESULT, {"call_id": start.call_id, "result": gave_up}))
    assert _says(ended) == [
        "The round is over: **gave\\_up**. The word was **cat**; the guesses: none."
    ]
    assert commands.tick(tick) == []


def test_a_guess_refused_round_not_running_stops_watching_and_waits_for_the_outcome() -> None:
    commands = _commands()
    moves = _play(commands)
    guess = _only(_look(commands, _only(moves, Tick), strokes=1), Ask)
    error = {"call_id": guess.call_id, "code": "round_not_running"}
    assert commands.take(_message(wire.TOOL_ERROR, error)) == []
    assert commands.game.rounds[_only(moves, Ask).call_id].watching is False


def test_a_failed_look_looks_again_and_the_looks_are_bounded() -> None:
    commands = _commands()
    tick = _only(_play(commands), Tick)
    for _ in range(MAX_POLLS - 1):
        ask = _only(commands.tick(tick), Ask)
        failed = _message(wire.TOOL_ERROR, {"call_id": ask.call_id, "code": "no_instance"})
        tick = _only(commands.take(failed) or [], Tick)
    ask = _only(commands.tick(tick), Ask)
    last = commands.take(_message(wire.TOOL_ERROR, {"call_id": ask.call_id, "code": "x"}))
    assert _says(last) == [
        "I stop watching the drawing now: finish the round, or give up, in the game."
    ]
    assert not [m for m in last or [] if isinstance(m, Tick)]


def test_one_round_at_a_time_and_a_failed_start_frees_the_conversation() -> None:
    commands = _commands()
    start = _only(_play(commands), Ask)
    assert _says(_play(commands, "u-2")) == [
        "A round is running already: draw, or give up in the game."
    ]
    receipt = {"call_id": start.call_id, "status": "activation_failed", "code": "app_crashed"}
    assert _says(commands.take(_message(wire.RECEIPT, receipt))) == [
        "The round could not start.\n\n*Details: `app_crashed`*"
    ]
    assert commands.take(_message(wire.TOOL_ERROR, {"call_id": start.call_id, "code": "x"})) == []
    assert _only(_play(commands, "u-3"), Ask).tool == START


def test_the_same_messages_give_the_same_calls_under_the_same_keys() -> None:
    def run() -> list[Step]:
        commands = _commands()
        moves = _play(commands)
        drawn = _look(commands, _only(moves, Tick), strokes=4)
        return [*moves, *drawn]

    first, again = run(), run()
    assert first == again
    assert len({m.call_id for m in first if isinstance(m, Ask | Tick)}) == 3


def test_a_guess_answered_after_the_round_ended_is_still_said_once() -> None:
    commands = _commands()
    moves = _play(commands)
    guess = _only(_look(commands, _only(moves, Tick), strokes=1), Ask)
    outcome = {"word": WORDS[0], "guesses": [WORDS[0]], "outcome": "won"}
    start = _only(moves, Ask).call_id
    commands.take(_message(wire.RESULT, {"call_id": start, "result": outcome}))
    right = _answer(commands, guess, correct=True, tries_left=4, outcome="won")
    assert _says(right) == [f"**{WORDS[0]}** is right!"]
    assert _answer(commands, guess, correct=True, tries_left=4, outcome="won") == []
