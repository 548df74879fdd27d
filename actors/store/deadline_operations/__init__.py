"""Deadline operations (`store.deadline_operation.*`): a runtime operation bound to one of an
app's tool calls, ended by the runtime at its `ends_at` or by the user (seed 004 §6.3)."""
