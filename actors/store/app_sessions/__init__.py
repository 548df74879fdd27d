"""App sub-sessions (`store.app_session.*`): one per instance, opened and closed with its row."""
