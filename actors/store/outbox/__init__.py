"""The store's outbox area (`store.outbox.*`): the machine (`machine`, pure), the protocol
(`messages`, re-exported by `lineup.actors.store.messages`) and the operations the store runs in
its transactions (`operations`)."""
