"""The store's instance area (`store.instance.*`, `store.focus_stack.*`): for now its machine
(`machine`, pure, shared with focus); its messages and operations are `_app_messages` and
`_instances`."""
