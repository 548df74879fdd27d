"""The actor kernel and one package per runtime actor (DESIGN §1, §10)."""
