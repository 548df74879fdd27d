"""The store's instance area (`store.instance.*`, `store.focus_stack.*`): the machine
(`machine`, pure, shared with focus), the protocol (`messages`, re-exported by
`lineup.actors.store.messages`) and the operations the store runs in its transactions
(`operations`)."""
