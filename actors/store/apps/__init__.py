"""The store's app area (`store.session_data.*`, `store.registry.*`, `store.inventory.*`): the
protocol (`messages`, re-exported by `lineup.actors.store.messages`) and the operations the store
runs in its transactions (`operations`)."""
