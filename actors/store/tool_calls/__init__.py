"""The store's tool call area (`store.tool_call.*`): the machine (`machine`, pure, shared with
the router), the protocol (`messages`, re-exported by `lineup.actors.store.messages`) and the
operations the store runs in its transactions (`operations`)."""
