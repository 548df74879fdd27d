"""The store's dead-letter area (`store.dead_letter.*`): the protocol (`messages`, re-exported by
`lineup.actors.store.messages`), the operations (`operations`), and the start-up sweep that
quarantines every row a start-up read could not decode (`sweep`)."""
