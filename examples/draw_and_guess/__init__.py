"""Draw-and-Guess (`app_scope = draw-and-guess`, kind `installed`): the user draws a word the
app picked, in its Surface (`web/`), and the Agent guesses it. Made with `lineup app new
--surface`; the code is `_app.py` (the tools), `_round.py` (a round, as data) and `_picture.py`
(the drawing as a PNG). It imports nothing of LineUp but `lineup.sdk`, and its own modules
relatively: in its bundle it is the top-level package `draw_and_guess`.
"""

from ._app import DrawAndGuess

__all__ = ["DrawAndGuess"]
