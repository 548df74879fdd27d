"""Bundled MiniApps: chat (Interact), task_dashboard, whiteboard (DESIGN §10)."""
