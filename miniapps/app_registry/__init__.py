"""App Registry (`app_scope = app-registry`, kind `core`, one global instance, seed 004 §4.2)."""

from ._app import AppRegistry

__all__ = ["AppRegistry"]
