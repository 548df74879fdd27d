"""Capability grants (`store.capability_grant.*`): the user's standing decisions per app and
capability."""
