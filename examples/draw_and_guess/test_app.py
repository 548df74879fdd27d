import pytest

from lineup.sdk import testkit

from . import DrawAndGuess


@pytest.mark.trio
async def test_a_round_is_won_by_guessing_the_word_the_surface_shows() -> None:
    app = DrawAndGuess()
    runtime = await testkit.start(app)
    game = await testkit.call_tool(app, "draw-and-guess.start_round", {})
    word = runtime.surfaces.by_instance[runtime.instance_id].state["word"]
    guess = await testkit.call_tool(app, "draw-and-guess.guess", {"word": word})
    assert guess.result == {"correct": True, "tries_left": 5, "outcome": "won"}
    assert game.result == {"word": word, "guesses": [word], "outcome": "won"}
