"""Pomodoro (`app_scope = pomodoro`, kind `bundled-reference`, seed 004 §6.3): focus periods
whose end the runtime owns."""

from ._app import Pomodoro

__all__ = ["Pomodoro"]
