"""Task Dashboard (`app_scope = task-dashboard`, kind `bundled-reference`, seed 003 §5.2)."""

from ._app import TaskDashboard

__all__ = ["TaskDashboard"]
