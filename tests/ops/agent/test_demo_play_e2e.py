"""`/play draw-and-guess` through the real runtime: the demo Agent (run here, at a fast pace,
against the runtime's embedded AppServer) starts a round, looks at the drawing, guesses wrong,
then right, and says the round's outcome, each step one line in the chat. The game is
`tests/support/guess_app.py`'s stand-in, with the real one's tool names and shapes; without
it, `/play` says how to install the game."""

from __future__ import annotations

from pathlib import Path
from typing import Final

import trio

from lineup.ops.agent import DemoAgent
from lineup.ops.agent._play import INSTALL_HINT, WORDS
from lineup.tests.support.guess_app import WORD, FakeDrawAndGuess
from lineup.tests.support.runtime import (
    AGENT_ID,
    AGENT_SECRET,
    start_runtime,
    start_runtime_with_app,
)
from lineup.tests.support.shell import ShellClient, connect_shell, tree_text

WAIT: Final = 60.0
PACE_S: Final = 0.05  # between two looks at the drawing (the real demo Agent's is seconds)


def _agent_texts(shell: ShellClient) -> list[str]:
    return [tree_text(i["tree"]) for i in shell.timeline() if i["author"] == "agent"]


async def _said(shell: ShellClient, wanted: str) -> str:
    with trio.fail_after(WAIT):
        await shell.wait_until(lambda s: any(wanted in t for t in _agent_texts(s)))
    return next(t for t in _agent_texts(shell) if wanted in t)


async def _agent(nursery: trio.Nursery, appserver_url: str) -> None:
    agent = DemoAgent(appserver_url, AGENT_ID, AGENT_SECRET, sync_timeout_ms=1_000, poll_s=PACE_S)
    with trio.fail_after(WAIT):
        await nursery.start(agent.run)


async def test_the_naive_guesser_plays_a_round_wrong_then_right_and_says_the_outcome(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    assert WORDS.index(WORD) == 1
    runtime = await start_runtime_with_app(
        nursery, data_dir, FakeDrawAndGuess, title="Draw-and-Guess"
    )
    await _agent(nursery, runtime.appserver_url)
    shell = await connect_shell(nursery, runtime.shell_url)
    await _said(shell, "/play draw-and-guess")  # greeted
    await shell.say("/play draw-and-guess")
    ended = await _said(shell, "The round is over")
    assert ended == f"The round is over: won. The word was {WORD}; the guesses: cat, {WORD}."
    await _said(shell, "is right!")
    steps = _agent_texts(shell)
    start = steps.index("Starting a round of Draw-and-Guess: draw the word the game shows you.")
    assert steps[start + 1 : start + 4] == [
        "I see 1 stroke: I guess cat.",
        "Not cat: 4 tries left.",
        f"I see 2 strokes: I guess {WORD}.",
    ]
    # The round's result and the winning guess's end together: either may come first.
    assert sorted(steps[start + 4 :]) == sorted([f"{WORD} is right!", ended])


async def test_play_without_the_game_says_how_to_install_it(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    runtime = await start_runtime(nursery, data_dir, demo_agent=False)
    await _agent(nursery, runtime.appserver_url)
    shell = await connect_shell(nursery, runtime.shell_url)
    await _said(shell, "/play draw-and-guess")  # greeted
    await shell.say("/play draw-and-guess")
    hint = await _said(shell, "is not installed")
    assert hint.startswith("Draw-and-Guess is not installed. Open the App Registry")
    assert INSTALL_HINT.startswith("**Draw-and-Guess** is not installed")
