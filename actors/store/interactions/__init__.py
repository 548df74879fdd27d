"""Standard interactions (`store.interaction.*`): the record and its machine."""
