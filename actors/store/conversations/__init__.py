"""The store's conversation area (`store.conversation.*`): the protocol (`messages`, re-exported
by `lineup.actors.store.messages`) and the operations the store runs in its transactions
(`operations`)."""
