"""Artifacts (`store.artifact.*`): the metadata of the files the gateway keeps for the apps."""
