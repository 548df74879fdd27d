"""Whiteboard (`app_scope = whiteboard`, kind `bundled-reference`): a board drawn in a Surface."""

from ._app import Whiteboard

__all__ = ["Whiteboard"]
