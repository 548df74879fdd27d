"""The store's audit area (`store.audit.*`): the protocol (`messages`, re-exported by
`lineup.actors.store.messages`) and the operations (`operations`), whose `audit_append` every
area uses to audit its changes in the same savepoint."""
