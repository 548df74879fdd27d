"""Capability grants (`store.capability_grant.*`): the user's standing decisions per app and
capability; and the capability requests that wait on the user or a provider
(`store.capability_request.*`), kept so each ends once."""
