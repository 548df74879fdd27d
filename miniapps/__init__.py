"""Bundled MiniApps: chat (Interact), task_dashboard, whiteboard (DESIGN §10), and `catalogue`,
which of them the registry offers (data only: importing it runs no app)."""
