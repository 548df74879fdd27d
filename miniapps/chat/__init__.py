"""Interact (`app_scope = chat`, kind `system`): the IM between the user and the Agent."""

from ._app import Chat

__all__ = ["Chat"]
